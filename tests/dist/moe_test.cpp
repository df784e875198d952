// A mixture of experts keeps the layout invariant (docs/design/architecture.md, Invariants, 1):
// its MoE layers (4 experts, top 2, every other layer; the load-balancing loss on) under tp (the
// experts' width split, the router replicated; with and without sequence parallelism), dp with
// ZeRO 1, 2 and 3, pp (1F1B and interleaved) and the activation policies, with and without a
// gated shared expert, give the one-rank run's losses and gradient norms (fp32, relative 1e-5 per
// step over 10 steps), dropless and with a capacity that drops, dropout off and on; bf16 within
// the bands of half_layouts_test.cpp. The routing statistics are the one-rank run's too.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/dist/train_testing.h"

namespace zt {
namespace {

struct Layout {
  int tp = 1, pp = 1, stage = 0;
  bool sp = false;
  int act = 0;     // 0 kept, 1 checkpointed, 2 Pa, 3 Pa+cpu
  int chunks = 1;  // model chunks per pipeline stage (> 1: the interleaved schedule)
  int ep = 1;      // expert-parallel ranks, out of the data x context ones
  int cp = 1;      // context-parallel ranks
};

std::string name(const Layout& l, const TrainOptions& o) {
  static const char* acts[] = {"", " ckpt", " Pa", " Pa+cpu"};
  return fmt::format("tp {} pp {}{} cp {} dp {} ep {} stage {}{}{} capacity {} dropout {} {}", l.tp,
                     l.pp, l.chunks > 1 ? " interleaved" : "", l.cp,
                     dist::world().size() / (l.tp * l.pp * l.cp), l.ep, l.stage, l.sp ? " sp" : "",
                     acts[l.act], o.moe_expert_capacity_factor, o.hidden_dropout,
                     dist::precision_name(o));
}

TrainOptions with(TrainOptions o, const Layout& l) {
  o.tensor_model_parallel_size = l.tp;
  test::set_pipeline(o, l.pp, l.chunks);
  o.zero_stage = l.stage;
  o.sequence_parallel = l.sp;
  o.checkpoint_activations = l.act >= 1;
  o.partition_activations = l.act >= 2;
  o.cpu_checkpointing = l.act == 3;
  o.expert_model_parallel_size = l.ep;
  o.context_parallel_size = l.cp;
  return o;
}

std::vector<StepMetrics> run(const TrainOptions& o, const Layout& l) {
  comm::Topology topo(dist::world(), l.tp, l.pp, nullptr, l.cp, l.ep);
  Trainer t(with(o, l), dist::pool(), topo);
  return t.run(false);
}

// test::small_moe over 10 steps, at a capacity factor (0: dropless).
TrainOptions small_moe(double dropout, double capacity) {
  TrainOptions o = test::small_moe(dropout, 10);
  o.moe_expert_capacity_factor = capacity;
  return o;
}

bool fits(const Layout& l) {
  const int world = dist::world().size();
  return world % (l.tp * l.pp * l.cp) == 0 && world / (l.tp * l.pp) % l.ep == 0;
}

void expect_routing_close(const std::vector<StepMetrics>& got, const std::vector<StepMetrics>& want,
                          const std::string& where) {
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    ASSERT_EQ(got[i].moe.layers.size(), want[i].moe.layers.size()) << where;
    for (size_t l = 0; l < got[i].moe.layers.size(); ++l) {
      const MoeLayerMetrics &g = got[i].moe.layers[l], &w = want[i].moe.layers[l];
      EXPECT_EQ(g.layer, w.layer) << where;
      EXPECT_LE(dist::rel(g.aux_loss, w.aux_loss), 1e-5) << where << " step " << i + 1;
      EXPECT_EQ(g.max_load, w.max_load) << where << " step " << i + 1;
      EXPECT_EQ(g.dropped_fraction, w.dropped_fraction) << where << " step " << i + 1;
    }
  }
}

void expect_layouts(const TrainOptions& o, const std::vector<Layout>& layouts) {
  const std::vector<StepMetrics> want = dist::train_run(o, false).steps;
  ASSERT_EQ(want.front().moe.layers.size(), 2u);
  if (o.moe_expert_capacity_factor > 0) {
    double dropped = 0;
    for (const StepMetrics& m : want) dropped += m.moe.layers.front().dropped_fraction;
    EXPECT_GT(dropped, 0) << "the capacity drops nothing: the case checks nothing of it";
  }
  for (const Layout& l : layouts) {
    if (!fits(l)) continue;
    const std::vector<StepMetrics> got = run(o, l);
    dist::expect_close(got, want, 1e-5, 1e-5, name(l, o));
    expect_routing_close(got, want, name(l, o));
  }
}

TEST(Moe, TensorAndDataParallelMatchOneRank) {
  for (double capacity : {0.0, 1.0})
    for (double dropout : {0.0, 0.1})
      expect_layouts(small_moe(dropout, capacity),
                     {{2}, {2, 1, 0, true}, {1, 1, 1}, {1, 1, 3}, {2, 1, 2, true}, {4}});
}

TEST(Moe, PipelineAndActivationPoliciesMatchOneRank) {
  expect_layouts(small_moe(0.1, 0.0), {{1, 2, 1},
                                       {1, 2, 0, false, 0, 2},
                                       {2, 2, 1, true},
                                       {1, 1, 3, false, 1},
                                       {2, 1, 1, false, 2},
                                       {2, 1, 0, true, 3}});
}

// A gated shared expert (Qwen-MoE's) beside the routed ones, with Qwen's q|k|v biases: its width
// split over tp like the dense MLP's, its gate replicated.
TEST(Moe, SharedExpertMatchesOneRank) {
  TrainOptions o = small_moe(0.1, 1.0);
  o.moe_shared_expert_intermediate_size = 40;
  o.moe_shared_expert_gate = true;
  o.add_qkv_bias = true;
  expect_layouts(o, {{2}, {2, 1, 1, true}, {1, 1, 3}, {1, 2, 1}, {2, 1, 0, false, 3}});
}

// Expert parallelism: the experts split over ep ranks of the data-parallel group, tokens to
// them and back by all-to-all, with tp, pp and ZeRO's stages (the experts' states over the ranks
// holding the same experts).
TEST(Moe, ExpertParallelMatchesOneRank) {
  for (double capacity : {0.0, 1.0})
    expect_layouts(small_moe(0.0, capacity), {{1, 1, 0, false, 0, 1, 2},
                                              {1, 1, 1, false, 0, 1, 2},
                                              {1, 1, 3, false, 0, 1, 2},
                                              {1, 1, 0, false, 0, 1, 4},
                                              {1, 1, 1, false, 0, 1, 4},
                                              {2, 1, 1, true, 0, 1, 2},
                                              {1, 2, 1, false, 0, 1, 2}});
}

// Context parallelism: each rank routes its chunks' tokens, the load-balancing loss's counts
// summed over the context group; with expert parallelism over the data x context ranks too.
// Dropless: a capacity is per rank's tokens (Megatron's), so it drops other choices than one rank.
TEST(Moe, ContextParallelMatchesOneRank) {
  expect_layouts(small_moe(0.0, 0.0), {{1, 1, 0, false, 0, 1, 1, 2},
                                       {1, 1, 1, false, 0, 1, 2, 2},
                                       {2, 1, 3, false, 0, 1, 1, 2},
                                       {1, 1, 1, false, 0, 1, 4, 2},
                                       {1, 1, 3, false, 1, 1, 2, 2}});
}

// bf16: within half_layouts_test.cpp's band (5e-4 relative loss), expert and context
// parallelism included.
TEST(Moe, HalfPrecisionWithinTolerance) {
  TrainOptions o = small_moe(0.0, 0.0);
  o.bf16 = true;
  const std::vector<StepMetrics> want = dist::train_run(o, false).steps;
  for (const Layout& l : std::vector<Layout>{{2, 1, 1, true},
                                             {1, 1, 3},
                                             {1, 2, 1},
                                             {1, 1, 1, false, 0, 1, 2},
                                             {1, 1, 0, false, 0, 1, 4},
                                             {1, 1, 3, false, 0, 1, 2, 2}})
    if (fits(l)) dist::expect_close(run(o, l), want, 5e-4, 0, name(l, o));
}

}  // namespace
}  // namespace zt
