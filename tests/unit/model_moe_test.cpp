// The mixture-of-experts MLP on one rank: the dispatcher's slots and capacity, the layout of the
// router and the stacked experts, chunks that never straddle two experts, and the gradients of
// the whole model (the load-balancing loss included) against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "src/data/mock_data.h"
#include "tests/support/model_rig.h"
#include "tests/support/tiny_gpt.h"

namespace zt {
namespace {

TEST(MoeSlots, RowsGoExpertByExpertInTokenOrder) {
  MoeSlots s;
  s.reserve(3, 2, 3);
  // Token t's two choices: (1, 0), (2, 1), (1, 2).
  const std::vector<int32_t> experts{1, 0, 2, 1, 1, 2};
  const std::vector<float> weights{0.6f, 0.4f, 0.5f, 0.5f, 0.7f, 0.3f};
  s.assign(experts, weights, 3, 2, 3, -1);
  EXPECT_EQ(s.rows, (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(s.picks, (std::vector<int64_t>{1, 3, 2}));
  // Expert 0: row 0; expert 1: rows 1-3 (tokens 0, 1, 2); expert 2: rows 4-5 (tokens 1, 2).
  EXPECT_EQ(s.slots, (std::vector<int32_t>{1, 0, 4, 2, 3, 5}));
  EXPECT_EQ(s.dropped, 0);
  EXPECT_EQ(s.total_rows(), 6);
}

TEST(MoeSlots, CapacityDropsTheLowestWeightsOfAFullExpert) {
  MoeSlots s;
  s.reserve(3, 2, 3);
  const std::vector<int32_t> experts{1, 0, 2, 1, 1, 2};
  const std::vector<float> weights{0.6f, 0.4f, 0.5f, 0.5f, 0.7f, 0.3f};
  // ceil(cf · N · k / E) = ceil(1.0 · 3 · 2 / 3) = 2 rows per expert.
  EXPECT_EQ(MoeSlots::capacity(1.0, 3, 2, 3), 2);
  EXPECT_EQ(MoeSlots::capacity(0.0, 3, 2, 3), -1);
  s.assign(experts, weights, 3, 2, 3, 2);
  // Expert 1 had weights 0.6 (token 0), 0.5 (token 1), 0.7 (token 2): token 1's choice drops.
  EXPECT_EQ(s.dropped, 1);
  EXPECT_EQ(s.rows, (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(s.picks, (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(s.slots, (std::vector<int32_t>{1, 0, 3, -1, 2, 4}));
}

TEST(MoeChunks, ChunksHoldWholeExpertsOrDivideOne) {
  // 4 experts of 6 rows, rows of 10 elements.
  EXPECT_EQ(chunk_rows(24, 10, 1000, 6), 24);
  EXPECT_EQ(chunk_rows(24, 10, 130, 6), 12);  // 13 rows fit: two whole experts
  EXPECT_EQ(chunk_rows(24, 10, 50, 6), 3);    // 5 rows fit: 3 divides an expert's 6
  EXPECT_EQ(chunk_rows(24, 10, 40, 6), 3);
  EXPECT_EQ(chunk_rows(24, 10, 5, 6), 1);
  EXPECT_EQ(chunk_rows(24, 10, 130), 13);
}

GptConfig tiny_moe(int experts, int topk) {
  GptConfig c = test::tiny_llama(2);
  c.num_experts = experts;
  c.moe_topk = topk;
  c.moe_ffn_hidden_size = 12;
  return c;
}

TEST(MoeLayout, AMoeLayerHoldsItsRouterAndStackedExperts) {
  GptConfig c = tiny_moe(4, 2);
  c.moe_layer_freq = 2;
  c.num_layers = 3;
  const ParamLayout l = ParamLayout::gpt(c, 2, 1);
  const ParamSpec& router = l.find("layers.0.mlp.router.weight");
  EXPECT_EQ(router.shape, (Shape{4, 16}));
  EXPECT_TRUE(router.tp_replicated);
  const ParamSpec& fc = l.find("layers.0.mlp.experts.fc.weight");
  EXPECT_EQ(fc.full_shape, (Shape{4 * 24, 16}));
  EXPECT_EQ(fc.shape, (Shape{4 * 12, 16}));
  EXPECT_EQ(fc.expert_rows, 12);
  // Expert 2's up rows on tp rank 1: local rows [2·12 + 6, 3·12) are full rows [2·24 + 18, 3·24).
  EXPECT_EQ(fc.full_index((2 * 12 + 6) * 16 + 3), (2 * 24 + 18) * 16 + 3);
  EXPECT_EQ(fc.full_index((2 * 12) * 16), (2 * 24 + 6) * 16);
  const ParamSpec& proj = l.find("layers.2.mlp.experts.proj.weight");
  EXPECT_EQ(proj.full_shape, (Shape{4 * 16, 12}));
  EXPECT_EQ(proj.shape, (Shape{4 * 16, 6}));
  EXPECT_EQ(proj.expert_rows, 16);
  // Layer 1 is dense.
  EXPECT_NO_THROW(l.find("layers.1.mlp.fc.weight"));
  EXPECT_THROW(l.find("layers.1.mlp.router.weight"), Error);
  EXPECT_THROW(l.find("layers.0.mlp.fc.weight"), Error);
  // The parameter count of the whole model and of what a token meets.
  const ParamLayout whole = ParamLayout::gpt(c);
  int64_t total = 0;
  for (const auto& p : whole.params()) total += p.numel();
  EXPECT_EQ(total, c.num_parameters());
  const int64_t one_expert = (24 + 12) * 16;
  EXPECT_EQ(c.num_parameters() - c.num_parameters(true), 2 * 2 * one_expert);
}

struct Fixture : test::ModelRig {
  Fixture(const GptConfig& c, const ZeroConfig& zero)
      : ModelRig(c, 2, DType::F32, 42, zero),
        tokens(static_cast<size_t>(2 * c.seq_length)),
        targets(tokens.size()) {
    MockData data(3, c.seq_length, c.vocab_size);
    for (int b = 0; b < 2; ++b)
      data.sample(b, tokens.data() + b * c.seq_length, targets.data() + b * c.seq_length);
    float* p = opt.master_params().f32();
    for (const auto& s : layout.params())
      if (s.init != ParamInit::Normal)
        for (int64_t i = 0; i < s.numel(); ++i)
          p[s.offset + i] += 0.1f * std::sin(static_cast<float>(s.offset + i));
  }
  // The training objective: the mean cross-entropy plus each MoE layer's coefficient · aux.
  double objective() {
    opt.zero_grad();
    model.moe().reset_totals();
    const float n = static_cast<float>(tokens.size());
    double l = model.forward_backward(tokens.data(), targets.data(), 1.0f / n, opt, acts, {});
    for (const MoeLayerTotals& t : model.moe().totals) l += config.moe_aux_loss_coeff * t.aux;
    return l;
  }
  // Every MoE layer's experts and kept rows of the last forward (the store keeps them all).
  std::vector<int32_t> routing() {
    std::vector<int32_t> out;
    const auto nk = static_cast<int64_t>(tokens.size()) * config.moe_topk;
    for (int i = 0; i < config.num_layers; ++i) {
      if (!config.moe_layer(i)) continue;
      const LayerActivations& a = acts.begin_forward(i);
      out.insert(out.end(), a.moe_experts, a.moe_experts + nk);
      out.insert(out.end(), a.moe_slots, a.moe_slots + nk);
    }
    return out;
  }
  std::vector<int32_t> tokens, targets;
};

// Finite differences of the objective against the gradient. Routing is piecewise constant in
// the parameters: a step that changes any token's experts or its kept rows would measure the
// jump, so such elements are skipped (the routing is compared before and after), and each
// tensor must keep most of its checks.
void expect_moe_gradients(const GptConfig& c, const ZeroConfig& zero = {}) {
  Fixture f(c, zero);
  f.objective();
  std::vector<float> grad(f.opt.working_grads().f32(),
                          f.opt.working_grads().f32() + f.layout.numel());
  float* p = f.opt.master_params().f32();
  int checked = 0;
  for (const auto& s : f.layout.params()) {
    int64_t big = 0;
    for (int64_t i = 0; i < s.numel(); ++i)
      if (std::abs(grad[s.offset + i]) > std::abs(grad[s.offset + big])) big = i;
    for (int64_t i : {big, s.numel() / 3, s.numel() - 1}) {
      float& w = p[s.offset + i];
      const float saved = w, eps = 2e-3f;
      w = saved + eps;
      const double up = f.objective();
      const std::vector<int32_t> route_up = f.routing();
      w = saved - eps;
      const double down = f.objective();
      const std::vector<int32_t> route_down = f.routing();
      w = saved;
      if (route_up != route_down) continue;
      const double fd = (up - down) / (2.0 * eps);
      EXPECT_NEAR(grad[s.offset + i], fd, 3e-4 + 3e-2 * std::abs(fd)) << s.name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GE(checked, static_cast<int>(f.layout.params().size()) * 2);
}

TEST(Moe, GradientsMatchFiniteDifferences) {
  GptConfig c = tiny_moe(4, 2);
  c.moe_aux_loss_coeff = 0.1f;
  expect_moe_gradients(c);
}

// GeLU experts beside a dense layer (every other layer MoE), sigmoid scores without
// renormalisation, one expert per token, biases in the dense layers.
TEST(Moe, GeluSigmoidTopOneGradientsMatchFiniteDifferences) {
  GptConfig c = test::tiny_gpt();
  c.num_experts = 3;
  c.moe_topk = 1;
  c.moe_ffn_hidden_size = 20;
  c.moe_layer_freq = 2;
  c.moe_sigmoid = true;
  c.moe_renormalize = false;
  c.moe_aux_loss_coeff = 0.05f;
  expect_moe_gradients(c);
}

// A shared expert beside the routed ones, gated by sigmoid(x · g) (Qwen-MoE) and ungated, with
// Qwen's attention biases (q|k|v only) and a capacity that drops routed rows.
TEST(Moe, SharedExpertGradientsMatchFiniteDifferences) {
  for (const bool gate : {true, false}) {
    SCOPED_TRACE(gate);
    GptConfig c = tiny_moe(4, 2);
    c.moe_shared_ffn = 20;
    c.moe_shared_gate = gate;
    c.moe_aux_loss_coeff = 0.1f;
    c.add_qkv_bias = true;
    c.moe_capacity_factor = gate ? 1.0f : 0.0f;
    const ParamLayout l = ParamLayout::gpt(c);
    EXPECT_EQ(l.find("layers.1.mlp.shared.fc.weight").shape, (Shape{40, 16}));
    EXPECT_EQ(l.find("layers.1.mlp.shared.proj.weight").shape, (Shape{16, 20}));
    EXPECT_EQ(l.find("layers.1.attn.qkv.bias").shape, (Shape{32}));
    EXPECT_THROW(l.find("layers.1.attn.proj.bias"), Error);
    EXPECT_EQ(l.block_index("layers.1") >= 0, true);
    int64_t total = 0;
    for (const auto& p : l.params()) total += p.numel();
    EXPECT_EQ(total, c.num_parameters());
    expect_moe_gradients(c);
  }
}

// A capacity that drops rows: dropped choices add nothing and take no gradient.
TEST(Moe, CapacityGradientsMatchFiniteDifferences) {
  GptConfig c = tiny_moe(4, 2);
  c.moe_capacity_factor = 0.75f;
  Fixture f(c, {});
  f.objective();
  int64_t dropped = 0;
  for (const MoeLayerTotals& t : f.model.moe().totals) dropped += t.dropped;
  EXPECT_GT(dropped, 0);
  expect_moe_gradients(c);
}

// Spans shorter than an expert (a stage-3-sized bucket): the experts' GEMMs run on parts of one
// expert and give the gradients one span gives.
TEST(Moe, ChunksWithinAnExpertGiveTheSameGradients) {
  GptConfig c = tiny_moe(4, 2);
  c.moe_aux_loss_coeff = 0.1f;
  Fixture whole(c, {});
  ZeroConfig small;
  small.reduce_bucket_elems = 80;  // 5 rows of 16: parts of a 12-row expert
  Fixture parts(c, small);
  whole.objective();
  parts.objective();
  const float* a = whole.opt.working_grads().f32();
  const float* b = parts.opt.working_grads().f32();
  double worst = 0;
  for (int64_t i = 0; i < whole.layout.numel(); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])) /
                                (1e-6 + std::abs(static_cast<double>(a[i]))));
  EXPECT_LT(worst, 1e-3);
  expect_moe_gradients(c, small);
}

}  // namespace
}  // namespace zt
