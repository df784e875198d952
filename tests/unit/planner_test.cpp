// The planner's own properties, in one process: the paper's closed forms for the largest model
// (Table 2) and per-device model states (Table 1), and the step-time model's mechanics — the
// ring formula on a known volume, overlap, size-dependent GEMM efficiency, the micro-batch
// search, cluster descriptions. (tests/dist/planner_test.cpp checks the plan against real runs.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "src/core/error.h"
#include "src/planner/cluster.h"
#include "src/planner/max_model.h"
#include "src/planner/shape_rule.h"
#include "src/planner/step_model.h"

namespace zt {
namespace {

PlanInput gpt_input(double parameters, int tp, int dp, int stage) {
  PlanInput in;
  in.model.seq_length = 1024;
  in.model.vocab_size = 50257;
  in.tp = tp;
  in.dp = dp;
  in.zero_stage = stage;
  in.working = DType::F16;
  shape_for_parameters(parameters, in.model, tp);
  in.model.padded_vocab_size = padded_vocab_size(in.model.vocab_size, 128, tp);
  return in;
}

TEST(Planner, LargestModelMatchesThePapersClosedForms) {
  // 32 GB, Nd = 64: Ψ = 32e9 / (16, 4 + 12/64, 2 + 14/64, 16/64) bytes per parameter.
  const double expected[] = {32e9 / 16, 32e9 / (4 + 12.0 / 64), 32e9 / (2 + 14.0 / 64),
                             32e9 / (16.0 / 64)};
  for (int stage = 0; stage <= 3; ++stage) {
    const PlanInput in = gpt_input(1e9, 1, 64, stage);
    const double n = static_cast<double>(max_parameters(in, 32e9, FitCriterion::ModelStates));
    EXPECT_NEAR(n, expected[stage], 0.01 * expected[stage]) << "stage " << stage;
  }
}

TEST(Planner, ModelStatesMatchTableOne) {
  const PlanInput in = gpt_input(7.5e9, 1, 64, 3);
  const MemoryPlan p = plan_memory(in);
  const double psi = static_cast<double>(p.num_parameters);
  EXPECT_NEAR(static_cast<double>(p.model_states()), 16 * psi / 64, 0.005 * 16 * psi / 64);
}

ClusterSpec one_node() {
  ClusterSpec c = cluster_preset("dgx-a100");
  c.intra_node_latency_us = 0;
  c.kernel_overhead_us = 0;
  return c;
}

TEST(StepModel, DataParallelTimeIsTheRingFormulaOnThePlansVolume) {
  PlanInput in = gpt_input(1e9, 1, 4, 2);
  const ClusterSpec c = one_node();
  SimOptions opt;
  opt.overlap_comm = false;
  const StepEstimate r = simulate_step(in, c, opt);
  // A ring over p ranks moves (p-1)/p of the paper-convention bytes per rank.
  const double expected = 0.75 * static_cast<double>(r.memory.comm_dp) / (c.intra_node_gbps * 1e9);
  EXPECT_NEAR(r.dp_comm_ms, expected * 1e3, 1e-9 * expected * 1e3);
  EXPECT_DOUBLE_EQ(r.dp_exposed_ms, r.dp_comm_ms);
  opt.overlap_comm = true;
  const StepEstimate o = simulate_step(in, c, opt);
  EXPECT_LT(o.dp_exposed_ms, r.dp_exposed_ms);
  EXPECT_LT(o.step_ms, r.step_ms);
  // Stage 2's parameter all-gather runs after backward: never hidden.
  EXPECT_GE(o.dp_exposed_ms + 1e-9,
            0.75 * static_cast<double>(r.memory.comm_dp_after) / (c.intra_node_gbps * 1e9) * 1e3);
}

TEST(StepModel, BiggerMicroBatchesRunGemmsCloserToPeak) {
  PlanInput in = gpt_input(2e9, 8, 1, 0);
  in.model.seq_length = 256;
  const ClusterSpec c = one_node();
  double last = 0;
  for (int b : {1, 2, 8, 32}) {
    in.micro_batch = b;
    const StepEstimate r = simulate_step(in, c);
    EXPECT_GT(r.gemm_efficiency, last) << "micro batch " << b;
    EXPECT_LE(r.gemm_efficiency, c.gemm_efficiency);
    last = r.gemm_efficiency;
  }
}

TEST(StepModel, MaxMicroBatchIsTheLargestThatFits) {
  PlanInput in = gpt_input(7.5e9, 8, 16, 2);
  in.checkpoint_activations = true;
  const ClusterSpec c = cluster_preset("dgx2-v100");
  const SimOptions opt;
  const int b = max_micro_batch(in, c, opt);
  ASSERT_GT(b, 0);
  in.micro_batch = b;
  EXPECT_TRUE(simulate_step(in, c, opt).fits);
  in.micro_batch = b + 1;
  EXPECT_FALSE(simulate_step(in, c, opt).fits);
}

TEST(StepModel, RecomputeCostsAForwardPass) {
  PlanInput in = gpt_input(1e9, 1, 1, 0);
  const ClusterSpec c = one_node();
  const StepEstimate plain = simulate_step(in, c);
  in.checkpoint_activations = true;
  const StepEstimate ckpt = simulate_step(in, c);
  EXPECT_GT(ckpt.recompute_ms, 0);
  EXPECT_GT(ckpt.hardware_flops, plain.hardware_flops);
  EXPECT_DOUBLE_EQ(ckpt.model_flops, plain.model_flops);
}

TEST(Cluster, JsonOverridesOnlyWhatItNames) {
  const ClusterSpec v = cluster_preset("dgx2-v100");
  const ClusterSpec c = cluster_from_json(nlohmann::json{{"gemm_efficiency", 0.5}}, v);
  EXPECT_EQ(c.gemm_efficiency, 0.5);
  EXPECT_EQ(c.peak_tflops, v.peak_tflops);
  EXPECT_EQ(cluster_from_json(cluster_to_json(v)).inter_node_gbps, v.inter_node_gbps);
  EXPECT_THROW(cluster_preset("dgx-9000"), InputError);
  EXPECT_THROW(cluster_from_json(nlohmann::json{{"gemm_efficiency", 2.0}}, v), InputError);
  EXPECT_THROW(cluster_from_json(nlohmann::json{{"peak_tflops", "fast"}}, v), InputError);
}

}  // namespace
}  // namespace zt
