// The key/value-cached decoder against the model recomputing the whole prefix per token
// (tests/support/decoder_testing.h): the same greedy tokens and the same logits to fp32
// rounding, whole or cut into chunks as a ZeRO bucket cuts them, prompt run at once or a token
// at a time; the sampler's cuts; the decoder's memory in its own category. Every architecture:
// GPT-2, Llama (rope, RMSNorm, SwiGLU, untied head, no biases) with 1, 2 and 4 key/value heads
// of 4, and mixtures of the two (rope with LayerNorm and GeLU; learned positions with RMSNorm,
// SwiGLU, grouped-query attention, biases and an untied head), and mixtures of experts (every
// layer MoE, with and without a gated shared expert, and every other one beside dense ones); fp32
// and bf16.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "src/core/memory_pool.h"
#include "src/model/gpt_decoder.h"
#include "src/model/resident_weights.h"
#include "src/model/sampler.h"
#include "tests/support/decoder_testing.h"
#include "tests/support/tiny_gpt.h"

namespace zt {
namespace {

constexpr uint64_t kSeed = 7;
constexpr float kScale = 8;
constexpr double kBf16Tolerance = 3e-2;
const std::vector<int32_t> kPrompt = {3, 11, 5};

struct Arch {
  std::string name;
  GptConfig config;
};

void PrintTo(const Arch& a, std::ostream* os) {
  *os << a.name;
}

// Rope with GPT-2's LayerNorm, GeLU, biases and tied head.
GptConfig rope_layernorm() {
  GptConfig c = test::tiny_gpt();
  c.seq_length = 11;
  c.position_embedding = PositionEmbedding::Rope;
  return c;
}

// Learned positions with RMSNorm, SwiGLU (with biases), one key/value head of 2 and an untied
// head.
GptConfig learned_rmsnorm_swiglu() {
  GptConfig c = test::tiny_gpt();
  c.normalization = Normalization::RMSNorm;
  c.swiglu = true;
  c.ffn_hidden_size = 40;
  c.num_query_groups = 1;
  c.untie_embeddings = true;
  return c;
}

// Llama with every layer a mixture of 4 SwiGLU experts, 2 per token (Mixtral's shape).
GptConfig llama_moe() {
  GptConfig c = test::tiny_llama(2);
  c.num_experts = 4;
  c.moe_topk = 2;
  return c;
}

// GPT-2 with layer 0 of 4 GeLU experts of another width, one per token by sigmoid scores, and
// layer 1 dense.
GptConfig gpt2_moe_every_other() {
  GptConfig c = test::tiny_gpt();
  c.num_experts = 4;
  c.moe_topk = 1;
  c.moe_ffn_hidden_size = 24;
  c.moe_layer_freq = 2;
  c.moe_sigmoid = true;
  return c;
}

// Qwen-MoE's shape: every layer 4 experts, 2 per token, beside a gated shared expert, and a q|k|v
// bias without the other linear biases.
GptConfig llama_moe_shared() {
  GptConfig c = llama_moe();
  c.moe_ffn_hidden_size = 12;
  c.moe_shared_ffn = 20;
  c.moe_shared_gate = true;
  c.add_qkv_bias = true;
  return c;
}

std::vector<Arch> archs() {
  return {{"gpt2", test::tiny_gpt()},
          {"llama_g1", test::tiny_llama(1)},
          {"llama_g2", test::tiny_llama(2)},
          {"llama_g4", test::tiny_llama(4)},
          {"rope_layernorm", rope_layernorm()},
          {"learned_rmsnorm_swiglu", learned_rmsnorm_swiglu()},
          {"llama_moe", llama_moe()},
          {"gpt2_moe_every_other", gpt2_moe_every_other()},
          {"llama_moe_shared", llama_moe_shared()}};
}

// (architecture, the source's max span (0: whole))
class Decoder : public ::testing::TestWithParam<std::tuple<Arch, int64_t>> {};

TEST_P(Decoder, CachedGreedyEqualsRecomputingThePrefix) {
  const GptConfig c = std::get<0>(GetParam()).config;
  const ParamLayout layout = ParamLayout::gpt(c);
  MemoryPool pool(make_host_allocator());
  ResidentWeights w(layout, DType::F32, pool, std::get<1>(GetParam()));
  test::load_scaled_init(w, layout, kSeed, kScale);
  const int max_new = c.seq_length - static_cast<int>(kPrompt.size()) + 1;  // every position
  const test::Continuation want = test::greedy_by_recompute(c, layout, w, pool, kPrompt, max_new);
  GptDecoder decoder(c, layout, c.seq_length, pool);
  const test::Continuation got = test::greedy_cached(decoder, w, kPrompt, max_new);
  // Far from ties, so equal tokens are a check of the logits, not luck.
  EXPECT_GT(test::min_top2_gap(want), 1e-3);
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_LE(test::max_rel_diff(got, want), 1e-5);
  EXPECT_EQ(decoder.length(), c.seq_length);
}

// In bf16 the decoder and the recomputing forward round at different places (the cached
// attention keeps its probabilities in fp32, the full one rounds them as GEMM operands): the
// logits agree to a few bf16 ulps of the largest, up to the first choice the rounding flips (a
// near tie: a MoE model's routing sharpens the logits' differences); the rows after it continue
// other prefixes and are not compared.
TEST_P(Decoder, Bf16CachedNearRecomputingThePrefix) {
  GptConfig c = std::get<0>(GetParam()).config;
  c.dtype = DType::BF16;
  const ParamLayout layout = ParamLayout::gpt(c);
  MemoryPool pool(make_host_allocator());
  ResidentWeights w(layout, DType::BF16, pool, std::get<1>(GetParam()));
  test::load_scaled_init(w, layout, kSeed, kScale);
  const int max_new = c.seq_length - static_cast<int>(kPrompt.size()) + 1;
  const test::Continuation want = test::greedy_by_recompute(c, layout, w, pool, kPrompt, max_new);
  GptDecoder decoder(c, layout, c.seq_length, pool);
  const test::Continuation got = test::greedy_cached(decoder, w, kPrompt, max_new);
  // The first choice follows the same prompt on both sides.
  ASSERT_FALSE(got.tokens.empty());
  EXPECT_EQ(got.tokens[0], want.tokens[0]);
  test::Continuation same = got;
  const auto first_other = std::mismatch(got.tokens.begin(), got.tokens.end(), want.tokens.begin());
  same.rows.resize(
      std::min(got.rows.size(), static_cast<size_t>(first_other.first - got.tokens.begin()) + 1));
  EXPECT_LE(test::max_rel_diff(same, want), kBf16Tolerance);
}

INSTANTIATE_TEST_SUITE_P(Archs, Decoder,
                         ::testing::Combine(::testing::ValuesIn(archs()),
                                            ::testing::Values(int64_t{0}, int64_t{48})),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_span" +
                                  std::to_string(std::get<1>(info.param));
                         });

class DecoderArch : public ::testing::TestWithParam<Arch> {};

TEST_P(DecoderArch, PromptAtOnceEqualsTokenByToken) {
  const GptConfig c = GetParam().config;
  const ParamLayout layout = ParamLayout::gpt(c);
  MemoryPool pool(make_host_allocator());
  ResidentWeights w(layout, DType::F32, pool);
  test::load_scaled_init(w, layout, kSeed, kScale);
  GptDecoder whole(c, layout, c.seq_length, pool), single(c, layout, c.seq_length, pool);
  whole.append(kPrompt, w);
  for (int32_t id : kPrompt) single.append(std::span<const int32_t>(&id, 1), w);
  ASSERT_EQ(whole.logits().size(), static_cast<size_t>(c.vocab_size));
  for (size_t i = 0; i < whole.logits().size(); ++i)
    EXPECT_NEAR(whole.logits()[i], single.logits()[i], 1e-5f * 10) << i;
}

// The arena is what bytes() says, counted as KvCache: with grouped-query attention the cache
// holds the key/value heads only, so it is smaller than with one per query head.
TEST_P(DecoderArch, MemoryIsCountedAsKvCache) {
  const GptConfig c = GetParam().config;
  const ParamLayout layout = ParamLayout::gpt(c);
  MemoryPool pool(make_host_allocator());
  {
    GptDecoder decoder(c, layout, c.seq_length, pool);
    EXPECT_EQ(pool.current(MemCategory::KvCache), GptDecoder::bytes(c, c.seq_length, 1));
    EXPECT_EQ(pool.current(MemCategory::Activations), 0u);
  }
  EXPECT_EQ(pool.current(MemCategory::KvCache), 0u);
  if (c.kv_heads() < c.heads) {
    GptConfig mha = c;
    mha.num_query_groups = 0;
    EXPECT_LT(GptDecoder::bytes(c, c.seq_length, 1), GptDecoder::bytes(mha, c.seq_length, 1));
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, DecoderArch, ::testing::ValuesIn(archs()),
                         [](const auto& info) { return info.param.name; });

TEST(DecoderTest, RefusesPositionsPastItsCapacity) {
  const GptConfig c = test::tiny_gpt();
  const ParamLayout layout = ParamLayout::gpt(c);
  MemoryPool pool(make_host_allocator());
  ResidentWeights w(layout, DType::F32, pool);
  GptDecoder decoder(c, layout, 4, pool);
  const std::vector<int32_t> five = {1, 2, 3, 4, 5};
  EXPECT_THROW(decoder.append(five, w), Error);
  const std::vector<int32_t> bad = {c.vocab_size};  // a padded row: never a token
  EXPECT_THROW(decoder.append(bad, w), Error);
}

TEST(SamplerTest, GreedyTakesTheFirstLargest) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  Sampler s(SamplingSettings{.greedy = true});
  EXPECT_EQ(s.next(logits), 1);
}

TEST(SamplerTest, TopKAndTopPKeepOnlyTheMostLikely) {
  // Probabilities ~ 0.64, 0.24, 0.09, 0.03: top-k 2 never draws 2 or 3, top-p 0.5 only 0.
  const std::vector<float> logits = {3.0f, 2.0f, 1.0f, 0.0f};
  Sampler k2(SamplingSettings{.top_k = 2, .seed = 1});
  Sampler p5(SamplingSettings{.top_p = 0.5f, .seed = 1});
  Sampler all(SamplingSettings{.seed = 1});
  std::vector<int> seen(4, 0);
  for (int i = 0; i < 2000; ++i) {
    const int32_t a = k2.next(logits);
    EXPECT_LT(a, 2);
    EXPECT_EQ(p5.next(logits), 0);
    ++seen[static_cast<size_t>(all.next(logits))];
  }
  // Without a cut every token is drawn, about as often as its probability says.
  for (int v : seen) EXPECT_GT(v, 0);
  EXPECT_NEAR(seen[0] / 2000.0, 0.644, 0.05);
}

TEST(SamplerTest, TheSameSeedDrawsTheSameTokens) {
  const std::vector<float> logits = {1.0f, 1.1f, 0.9f, 1.05f};
  Sampler a(SamplingSettings{.seed = 99}), b(SamplingSettings{.seed = 99}),
      c(SamplingSettings{.seed = 100});
  std::vector<int32_t> x, y, z;
  for (int i = 0; i < 64; ++i) {
    x.push_back(a.next(logits));
    y.push_back(b.next(logits));
    z.push_back(c.next(logits));
  }
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
}

}  // namespace
}  // namespace zt
