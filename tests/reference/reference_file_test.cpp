// Checks the committed golden file against itself: it loads, has what the model test needs, and
// its loss is the cross-entropy of its logits (so logits, targets and loss agree).
#include "tests/reference/reference_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "src/core/error.h"

namespace zt::test {
namespace {

const ReferenceFile& ref() {
  static const ReferenceFile f = ReferenceFile::load(ZT_REFERENCE_FILE);
  return f;
}

TEST(ReferenceFile, ConfigAndShapes) {
  const auto& cfg = ref().config();
  const int64_t layers = cfg.at("n_layer"), c = cfg.at("n_embd"), t = cfg.at("seq_len");
  const int64_t b = cfg.at("batch_size"), v = cfg.at("vocab_size"),
                vp = cfg.at("padded_vocab_size");
  EXPECT_EQ(vp % 128, 0);
  EXPECT_GE(vp, v);
  EXPECT_EQ(ref().f32("param/embedding.word").shape, (std::vector<int64_t>{vp, c}));
  EXPECT_EQ(ref().f32("param/embedding.position").shape, (std::vector<int64_t>{t, c}));
  EXPECT_EQ(ref().f32("param/layers.0.attn.qkv.weight").shape, (std::vector<int64_t>{3 * c, c}));
  EXPECT_EQ(ref().f32("param/layers.0.mlp.proj.weight").shape, (std::vector<int64_t>{c, 4 * c}));
  EXPECT_EQ(ref().f32("out/logits").shape, (std::vector<int64_t>{b, t, vp}));
  EXPECT_EQ(ref().f32("out/losses").numel(), cfg.at("steps").get<int64_t>());
  EXPECT_TRUE(ref().has(fmt::format("param/layers.{}.ln2.bias", layers - 1)));
  EXPECT_FALSE(ref().has(fmt::format("param/layers.{}.ln2.bias", layers)));

  // Every parameter has a gradient and a post-step value in both sections, of its shape.
  int params = 0;
  for (const std::string& name : ref().names()) {
    if (!name.starts_with("param/")) continue;
    ++params;
    const std::string base = name.substr(6);
    const auto shape = ref().f32(name).shape;
    for (const char* prefix : {"grad/", "step3/", "bf16/grad/", "bf16/step3/"})
      EXPECT_EQ(ref().f32(prefix + base).shape, shape) << prefix << base;
  }
  EXPECT_EQ(params, 2 + 12 * layers + 2);
}

TEST(ReferenceFile, LossIsCrossEntropyOfLogits) {
  const auto& cfg = ref().config();
  const int64_t v = cfg.at("vocab_size"), vp = cfg.at("padded_vocab_size");
  const I32Tensor targets = ref().i32("input/targets");
  const I32Tensor tokens = ref().i32("input/tokens");
  const F32Tensor logits = ref().f32("out/logits");
  ASSERT_EQ(targets.shape, tokens.shape);
  ASSERT_EQ(logits.numel(), targets.numel() * vp);
  for (const int32_t tok : tokens.data) ASSERT_TRUE(tok >= 0 && tok < v);

  // Mean over tokens of logsumexp(first V logits) - logit[target]; padding columns excluded.
  double total = 0;
  for (int64_t i = 0; i < targets.numel(); ++i) {
    const float* row = logits.data.data() + i * vp;
    ASSERT_TRUE(targets.data[i] >= 0 && targets.data[i] < v);
    const double mx = *std::max_element(row, row + v);
    double sum = 0;
    for (int64_t j = 0; j < v; ++j) sum += std::exp(row[j] - mx);
    total += mx + std::log(sum) - row[targets.data[i]];
  }
  const double loss = total / static_cast<double>(targets.numel());
  const float want = ref().f32("out/loss").data.at(0);
  // The logits were rounded to float32 after a float64 computation: ~1e-7 relative.
  EXPECT_NEAR(loss, want, 1e-6 * std::abs(want));
  EXPECT_FLOAT_EQ(ref().f32("out/losses").data.at(0), want);
}

TEST(ReferenceFile, BadFilesFailClearly) {
  const std::string path = ::testing::TempDir() + "zt_bad_reference.bin";
  std::ofstream(path, std::ios::binary) << "NOTAREF!xxxxxxxxxxxx";
  try {
    ReferenceFile::load(path);
    FAIL() << "loaded a file with a bad magic";
  } catch (const zt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad magic"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ReferenceFile::load(path + ".missing"), zt::Error);
  EXPECT_THROW(ref().f32("no/such/tensor"), zt::Error);
  EXPECT_THROW(ref().f32("input/tokens"), zt::Error);  // i32, asked as f32
  std::remove(path.c_str());
}

}  // namespace
}  // namespace zt::test
