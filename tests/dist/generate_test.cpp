// The key/value-cached decoder on several ranks against one process recomputing the whole
// prefix per token (tests/support/decoder_testing.h): tensor parallelism over every rank (each
// rank its shard of the heads, MLP columns and vocabulary; the logits all-gathered), and the
// parameters reached through a ZeRO stage-3 optimizer over every rank (what --sample-interval
// does during training). Same greedy tokens, same logits to fp32 rounding. GPT-2, and Llama
// (rope, RMSNorm, SwiGLU, untied head, no biases) with 2 key/value heads of 4 (one per rank at
// tp 2) and with 4.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/comm/topology.h"
#include "src/model/gpt_decoder.h"
#include "src/model/resident_weights.h"
#include "src/zero/zero_optimizer.h"
#include "tests/dist/dist_env.h"
#include "tests/support/decoder_testing.h"
#include "tests/support/tiny_gpt.h"

namespace zt {
namespace {

constexpr uint64_t kSeed = 7;
constexpr float kScale = 8;
const std::vector<int32_t> kPrompt = {3, 11, 5};

// 4 heads and a 64-row padded vocabulary: they split over up to 4 ranks (the Llama shapes' key/
// value heads and MLP width over 2).
GptConfig model(const std::string& arch = "gpt2") {
  GptConfig c = arch == "llama_g2"   ? test::tiny_llama(2)
                : arch == "llama_g4" ? test::tiny_llama(4)
                                     : test::tiny_gpt();
  c.heads = 4;
  c.padded_vocab_size = 64;
  return c;
}

test::Continuation reference(const GptConfig& c, MemoryPool& pool, int max_new) {
  const ParamLayout layout = ParamLayout::gpt(c);
  ResidentWeights w(layout, DType::F32, pool);
  test::load_scaled_init(w, layout, kSeed, kScale);
  return test::greedy_by_recompute(c, layout, w, pool, kPrompt, max_new);
}

class Generate : public ::testing::TestWithParam<std::string> {};

TEST_P(Generate, TensorParallelCachedEqualsRecomputing) {
  const GptConfig c = model(GetParam());
  const int tp = dist::world().size();
  if (c.kv_heads() % tp != 0 || c.ffn_hidden() % tp != 0)
    GTEST_SKIP() << GetParam() << " does not split over " << tp << " ranks";
  comm::Topology topo(dist::world(), tp);
  MemoryPool pool(make_host_allocator());
  const int max_new = c.seq_length - static_cast<int>(kPrompt.size()) + 1;
  const test::Continuation want = reference(c, pool, max_new);
  for (int64_t span : {int64_t{0}, int64_t{40}}) {
    const ParamLayout layout = ParamLayout::gpt(c, tp, topo.tp_rank());
    ResidentWeights w(layout, DType::F32, pool, span);
    test::load_scaled_init(w, layout, kSeed, kScale);
    GptDecoder decoder(c, layout, c.seq_length, pool, &topo.tp());
    const test::Continuation got = test::greedy_cached(decoder, w, kPrompt, max_new);
    EXPECT_GT(test::min_top2_gap(want), 1e-3);
    EXPECT_EQ(got.tokens, want.tokens) << "max span " << span;
    EXPECT_LE(test::max_rel_diff(got, want), 1e-5) << "max span " << span;
  }
}

TEST_P(Generate, ThroughAZeroStage3SourceEqualsRecomputing) {
  const GptConfig c = model(GetParam());
  MemoryPool pool(make_host_allocator());
  const int max_new = c.seq_length - static_cast<int>(kPrompt.size()) + 1;
  const test::Continuation want = reference(c, pool, max_new);
  comm::Topology topo(dist::world(), 1);  // dp = world
  const ParamLayout layout = ParamLayout::gpt(c);
  ZeroConfig zero;
  zero.stage = 3;
  zero.dp = &topo.dp();
  zero.world = &topo.host_world();
  zero.reduce_bucket_elems = 256;  // several partition units per layer
  zero.allgather_bucket_elems = 512;
  zero.param_persistence_threshold = 0;
  ZeroOptimizer opt(layout, DType::F32, AdamConfig{}, pool, kSeed, zero);
  opt.set_master(test::scaled_init(layout, kSeed, kScale).data());
  GptDecoder decoder(c, layout, c.seq_length, pool);
  Sampler greedy(SamplingSettings{.greedy = true});
  test::Continuation got;
  const Generation g = generate(
      decoder, opt, kPrompt, max_new, -1, greedy,
      [&](int32_t) { got.rows.emplace_back(decoder.logits().begin(), decoder.logits().end()); },
      [&] { opt.zero_grad(); });
  got.tokens = g.tokens;
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_LE(test::max_rel_diff(got, want), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Archs, Generate, ::testing::Values("gpt2", "llama_g2", "llama_g4"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace zt
