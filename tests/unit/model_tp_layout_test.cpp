// ParamLayout under tensor parallelism, without MPI: every rank's shards tile each full tensor
// exactly once, QKV is split by heads (q, k and v rows of the local heads), row-parallel weights
// by input columns, initialisation is the tp = 1 slice, and bad splits are InputErrors.
#include <gtest/gtest.h>

#include <vector>

#include "src/model/param_layout.h"

namespace zt {
namespace {

GptConfig model(int tp) {
  GptConfig c;
  c.num_layers = 2;
  c.hidden = 24;
  c.heads = 4;
  c.seq_length = 8;
  c.vocab_size = 30;
  c.padded_vocab_size = padded_vocab_size(c.vocab_size, 4, tp);
  return c;
}

TEST(TpLayout, ShardsTileEveryFullTensorOnce) {
  for (int tp : {1, 2, 4}) {
    const GptConfig c = model(tp);
    const ParamLayout l0 = ParamLayout::gpt(c, tp, 0);
    for (size_t k = 0; k < l0.params().size(); ++k) {
      const ParamSpec& s0 = l0.params()[k];
      std::vector<int> hits(static_cast<size_t>(s0.full_numel()), 0);
      for (int r = 0; r < tp; ++r) {
        const ParamLayout lr = ParamLayout::gpt(c, tp, r);
        const ParamSpec& s = lr.params()[k];
        EXPECT_EQ(s.offset, s0.offset) << s.name;  // same place on every rank
        for (int64_t i = 0; i < s.numel(); ++i) ++hits[static_cast<size_t>(s.full_index(i))];
      }
      const int want = s0.tp_replicated ? tp : 1;
      for (size_t i = 0; i < hits.size(); ++i)
        ASSERT_EQ(hits[i], want) << s0.name << " full element " << i << " tp=" << tp;
      if (!s0.tp_replicated) {
        EXPECT_EQ(s0.numel() * tp, s0.full_numel()) << s0.name;
      }
    }
  }
}

TEST(TpLayout, QkvIsSplitByHeadsAndProjByColumns) {
  const GptConfig c = model(2);
  const int h = c.hidden, hl = h / 2;
  const ParamLayout l = ParamLayout::gpt(c, 2, 1);
  const ParamSpec& qkv = l.find("layers.0.attn.qkv.weight");
  EXPECT_EQ(qkv.shape, (Shape{3 * hl, h}));
  // Local row j of group g (q, k, v) is full row g·h + hl + j: rank 1 holds heads 2 and 3.
  for (int g = 0; g < 3; ++g)
    for (int j : {0, hl - 1})
      EXPECT_EQ(qkv.full_index((int64_t{g} * hl + j) * h + 5), (int64_t{g} * h + hl + j) * h + 5);
  const ParamSpec& proj = l.find("layers.1.attn.proj.weight");
  EXPECT_EQ(proj.shape, (Shape{h, hl}));
  EXPECT_EQ(proj.full_index(3 * hl + 2), 3 * h + hl + 2);
  const ParamSpec& wte = l.find("embedding.word");
  EXPECT_EQ(wte.full_index(0), int64_t{c.padded_vocab_size / 2} * h);
  EXPECT_TRUE(l.find("layers.0.mlp.proj.bias").tp_replicated);
  EXPECT_FALSE(l.find("layers.0.mlp.fc.bias").tp_replicated);
}

TEST(TpLayout, InitIsTheSliceOfTp1) {
  const GptConfig c = model(2);  // padded for tp 2, used at tp 1 and tp 2
  const ParamLayout full = ParamLayout::gpt(c);
  std::vector<float> w(static_cast<size_t>(full.numel()));
  init_parameters(full, 7, w.data());
  for (int r = 0; r < 2; ++r) {
    const ParamLayout l = ParamLayout::gpt(c, 2, r);
    std::vector<float> s(static_cast<size_t>(l.numel()));
    init_parameters(l, 7, s.data());
    for (size_t k = 0; k < l.params().size(); ++k) {
      const ParamSpec& p = l.params()[k];
      const int64_t base = full.params()[k].offset;
      for (int64_t i = 0; i < p.numel(); ++i)
        ASSERT_EQ(s[static_cast<size_t>(p.offset + i)],
                  w[static_cast<size_t>(base + p.full_index(i))])
            << p.name << "[" << i << "] rank " << r;
    }
  }
}

TEST(TpLayout, RejectsSplitsThatDoNotDivide) {
  GptConfig c = model(1);
  c.heads = 3;  // hidden 24 = 3 heads of 8
  EXPECT_THROW((void)ParamLayout::gpt(c, 2, 0), InputError);
  c = model(1);  // padded vocabulary 32 for tp 1: fine for 2, 4, not for 3 (heads 4 neither)
  EXPECT_THROW((void)ParamLayout::gpt(c, 3, 0), InputError);
  c.padded_vocab_size = 30;  // heads, hidden and ffn split over 4, the vocabulary does not
  EXPECT_THROW((void)ParamLayout::gpt(c, 4, 0), InputError);
  EXPECT_NO_THROW((void)ParamLayout::gpt(model(4), 4, 3));
}

}  // namespace
}  // namespace zt
