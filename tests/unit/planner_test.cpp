// The planner's own properties, in one process: the paper's closed forms for the largest model
// (Table 2) and per-device model states (Table 1), and the step-time model's mechanics — the
// ring formula on a known volume, overlap, size-dependent GEMM efficiency, the micro-batch
// search, GEMM speed by operand precision, memory and traffic in the working precision, cluster
// descriptions. (tests/dist/planner_test.cpp checks the plan against real runs.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kernels/backend_memory.h"
#include "src/comm/nccl_groups.h"
#include "src/comm/scalar_reducer.h"
#include "src/core/error.h"
#include "src/model/gpt.h"
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

// The CUDA backend's own device memory: its GEMM workspace in buffers, and with Pa+cpu the
// device buffer the next span's input is prefetched into (the CPU reads host checkpoints in
// place); the scalar reducers leave the device buffers (pinned host memory on CUDA); the CPU
// kernels' scratch (attention's per-thread tiles) leaves the activations; nothing else of the
// plan moves. NCCL: the world and the dp group (tp, pp and mp are one rank each, no NCCL), each
// with its planned memory.
TEST(Planner, CudaAddsTheGemmWorkspaceAndThePrefetchBuffer) {
  PlanInput in = gpt_input(1e9, 1, 4, 2);
  in.micro_batch = 2;
  in.checkpoint_activations = in.partition_activations = in.cpu_checkpointing = true;
  in.staged_half_reductions = false;
  const MemoryPlan cpu = plan_memory(in);
  in.cuda = true;
  const MemoryPlan gpu = plan_memory(in);
  const int world = in.tp * in.dp * in.pp;
  const size_t reducers = comm::ScalarReducer::bytes(world, kNumMemCategories + 2) +
                          comm::ScalarReducer::bytes(world, 1);
  EXPECT_GT(reducers, 0u);
  EXPECT_EQ(gpu.buffers + reducers, cpu.buffers + kCudaGemmWorkspaceBytes);
  EXPECT_EQ(gpu.backend_buffers, kCudaGemmWorkspaceBytes);
  EXPECT_EQ(cpu.backend_buffers, 0u);
  EXPECT_EQ(gpu.nccl_communicators, 2);
  EXPECT_EQ(gpu.nccl_bytes, 2 * comm::kNcclPlannedBytesPerCommunicator);
  EXPECT_EQ(cpu.nccl_communicators, 0);
  EXPECT_EQ(cpu.nccl_bytes, 0u);
  GptConfig c = in.model;
  c.dtype = in.working;
  const size_t scratch = Gpt::kernel_scratch_bytes(c, in.micro_batch, in.tp);
  EXPECT_GT(scratch, 0u);
  EXPECT_EQ(gpu.activations + scratch - cpu.activations,
            size_t{2} * 1024 * static_cast<size_t>(in.model.hidden) * 2);  // fp16 [2, 1024, h]
  EXPECT_EQ(gpu.model_states(), cpu.model_states());
  EXPECT_EQ(gpu.host_checkpoints, cpu.host_checkpoints);
  in.cpu_checkpointing = false;  // no offload: no prefetch buffer
  const MemoryPlan kept = plan_memory(in);
  in.cuda = false;
  EXPECT_EQ(kept.activations + scratch, plan_memory(in).activations);
}

// A GPT shape of `layers` x `hidden` (`heads` heads), sequence 1024, GPT-2's vocabulary, fp16,
// micro batch 1 with activation checkpoints, on CUDA (as `zerotron estimate --device cuda`).
PlanInput paper_shape(int layers, int hidden, int heads, int dp, int stage) {
  PlanInput in;
  in.model.num_layers = layers;
  in.model.hidden = hidden;
  in.model.heads = heads;
  in.model.seq_length = 1024;
  in.model.vocab_size = 50257;
  in.model.padded_vocab_size = padded_vocab_size(in.model.vocab_size, 128, 1);
  in.dp = dp;
  in.zero_stage = stage;
  in.working = DType::F16;
  in.micro_batch = 1;
  in.checkpoint_activations = true;
  in.cuda = true;
  in.staged_half_reductions = false;  // NCCL reduces half tensors natively
  return in;
}

constexpr double kV100Bytes = 32.0 * (1 << 30);

// ZeRO-Offload (Ren et al., 2021): a 13B model trains on one 32 GB V100 with the optimizer on
// the host. The shape is GPT-3's 13B (40 layers, hidden 5120, 40 heads: 12.85B parameters
// here), ZeRO 2 on one GPU. With --offload-optimizer cpu the device keeps the fp16 parameters,
// activations and buffers, the host the fp32 states and the fp16 gradient shard; without it,
// the 16 bytes per parameter do not fit.
TEST(Planner, ZeroOffloadFitsThirteenBillionOnOneV100) {
  PlanInput in = paper_shape(40, 5120, 40, 1, 2);
  const MemoryPlan resident = plan_memory(in);
  EXPECT_NEAR(static_cast<double>(resident.num_parameters), 12.85e9, 0.01e9);
  EXPECT_FALSE(plan_fits(resident, kV100Bytes, FitCriterion::Device));
  in.optimizer_tier = StateTier::Host;
  const MemoryPlan offloaded = plan_memory(in);
  EXPECT_TRUE(plan_fits(offloaded, kV100Bytes, FitCriterion::Device));
  const auto psi = static_cast<size_t>(offloaded.num_parameters);
  EXPECT_EQ(offloaded.optimizer, 0u);
  EXPECT_EQ(offloaded.grads, 0u);
  EXPECT_GE(offloaded.host_optimizer, 12 * psi);
  EXPECT_GE(offloaded.host_grads, 2 * psi);
}

// ZeRO-Infinity (Rajbhandari et al., SC21): 1T parameters on one DGX-2 (16 x 32 GB V100, 1.5 TB
// of host memory, 8 x 3.84 TB NVMe) with parameters and optimizer states on NVMe. The shape:
// 128 layers, hidden 25600, 160 heads (1.008T), ZeRO 3 over the node's 16 ranks, fp16, micro
// batch 1 with activation checkpoints. With the optimizer on NVMe the gradient shards go there
// too (in host memory they would take 2 TB of the node's 1.5 TB): each GPU's share fits its
// device, the 16 ranks' host buffers fit the host and their swap files the NVMe.
TEST(Planner, ZeroInfinityOneTrillionFitsOnOneDgx2) {
  PlanInput in = paper_shape(128, 25600, 160, 16, 3);
  in.optimizer_tier = StateTier::Nvme;
  in.param_tier = StateTier::Nvme;
  const MemoryPlan p = plan_memory(in);
  EXPECT_NEAR(static_cast<double>(p.num_parameters), 1.008e12, 0.001e12);
  EXPECT_TRUE(plan_fits(p, kV100Bytes, FitCriterion::Device));
  EXPECT_EQ(p.params + p.grads + p.optimizer, 0u);
  EXPECT_EQ(p.host_grads + p.host_params + p.host_optimizer, 0u);
  const double host = static_cast<double>(p.nvme_buffers + p.host_checkpoints + p.host_snapshot);
  EXPECT_LT(16 * host, 1.5e12) << host;
  const double nvme = static_cast<double>(p.nvme_bytes);
  EXPECT_LT(16 * nvme, 30.72e12) << nvme;
  // Every model-state byte is in a swap file: 2 (parameters) + 2 (gradients) + 12 (optimizer)
  // bytes per parameter of the rank's shard, and a little page rounding.
  EXPECT_GE(16 * nvme, 16 * static_cast<double>(p.num_parameters));
  EXPECT_LT(16 * nvme, 1.01 * 16 * static_cast<double>(p.num_parameters));
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
  EXPECT_NEAR(r.dp_exposed_ms, r.dp_comm_ms, 1e-9 * r.dp_comm_ms);  // nothing to hide behind
  opt.overlap_comm = true;
  const StepEstimate o = simulate_step(in, c, opt);
  EXPECT_LT(o.dp_exposed_ms, r.dp_exposed_ms);
  EXPECT_LT(o.step_ms, r.step_ms);
  // Stage 2's parameter all-gather runs after backward: never hidden.
  EXPECT_GE(o.dp_exposed_ms + 1e-9,
            0.75 * static_cast<double>(r.memory.comm_dp_after) / (c.intra_node_gbps * 1e9) * 1e3);
}

TEST(StepModel, AGroupAcrossNodesGetsTheNicsItMayUse) {
  // Stage 2 over 16 ranks on two 8-GPU nodes, nothing else in the step but its traffic.
  PlanInput in = gpt_input(1e9, 1, 16, 2);
  ClusterSpec c = one_node();
  c.inter_node_latency_us = 0;
  c.inter_node_efficiency = 1;
  c.nics_per_node = 8;
  SimOptions opt;
  opt.overlap_comm = false;
  auto ring_ms = [&](double gbps) {
    const StepEstimate r = simulate_step(in, c, opt);
    return 15.0 / 16.0 * static_cast<double>(r.memory.comm_dp) / (gbps * 1e9) * 1e3;
  };
  // All NICs: the one group leaving each node has the node's bandwidth.
  c.nics_per_collective = 0;
  double t = simulate_step(in, c, opt).dp_comm_ms;
  EXPECT_NEAR(t, ring_ms(c.inter_node_gbps), 1e-9 * t);
  // One NIC per collective: an eighth of it, though seven NICs stay idle.
  c.nics_per_collective = 1;
  t = simulate_step(in, c, opt).dp_comm_ms;
  EXPECT_NEAR(t, ring_ms(c.inter_node_gbps / 8), 1e-9 * t);
  // Groups one rank per node (tp 8 inside the node, dp across): eight groups share the eight
  // NICs, one each, whatever a collective may use.
  in = gpt_input(1e9, 8, 16, 2);
  const double one_each = simulate_step(in, c, opt).dp_comm_ms;
  c.nics_per_collective = 0;
  EXPECT_DOUBLE_EQ(simulate_step(in, c, opt).dp_comm_ms, one_each);
}

TEST(StepModel, ZeroThreeGathersHideAsFarAsThePrefetchPolicyAllows) {
  // Stage 3 on 64 ranks across nodes: gathering only at each unit's start exposes every
  // gather; prefetching by --prefetch-bucket-size hides them behind the units before.
  PlanInput in = gpt_input(1e9, 1, 64, 3);
  in.micro_batch = 4;
  const ClusterSpec c = cluster_preset("dgx-a100");
  SimOptions none, ahead;
  none.prefetch_bucket_elems = 0;
  ahead.prefetch_bucket_elems = 200'000'000;
  const StepEstimate n = simulate_step(in, c, none), a = simulate_step(in, c, ahead);
  EXPECT_DOUBLE_EQ(n.dp_comm_ms, a.dp_comm_ms);  // the same traffic
  EXPECT_GT(n.dp_exposed_ms, a.dp_exposed_ms);
  EXPECT_LT(a.step_ms, n.step_ms);
  // --max-live-parameters below two units' size takes prefetching away again.
  ahead.max_live_elems = 1;
  EXPECT_DOUBLE_EQ(simulate_step(in, c, ahead).step_ms, n.step_ms);
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

TEST(StepModel, GemmsRunAtThePeakOfTheirOperands) {
  // Compute-bound fp32 GEMMs at 19.5 TFLOP/s take 312 / 19.5 = 16x the time of bf16 ones at
  // 312; the few GEMMs the bf16 roofline makes memory-bound (attention's) can only lower it.
  PlanInput in = gpt_input(7.5e9, 8, 1, 0);
  in.micro_batch = 8;
  ClusterSpec c = one_node();
  c.tf32 = false;
  const StepEstimate half = simulate_step(in, c);
  in.working = DType::F32;
  const StepEstimate fp32 = simulate_step(in, c);
  EXPECT_DOUBLE_EQ(half.hardware_flops, fp32.hardware_flops);
  EXPECT_EQ(half.gemm_peak_tflops, 312);
  EXPECT_EQ(fp32.gemm_peak_tflops, 19.5);
  const double ratio = fp32.gemm_ms / half.gemm_ms;
  EXPECT_LE(ratio, 16 * (1 + 1e-9));
  EXPECT_GT(ratio, 0.9 * 16);
  // TF32 (on by default on the A100 preset) takes fp32 GEMMs to 156 TFLOP/s.
  c.tf32 = true;
  const StepEstimate tf32 = simulate_step(in, c);
  EXPECT_EQ(tf32.gemm_peak_tflops, 156);
  EXPECT_NEAR(fp32.gemm_ms / tf32.gemm_ms, 156 / 19.5, 1e-9 * 156 / 19.5);
}

TEST(StepModel, ActivationsAndMemoryAreInTheWorkingPrecision) {
  PlanInput in = gpt_input(7.5e9, 8, 4, 2);
  in.micro_batch = 4;
  in.checkpoint_activations = in.partition_activations = true;
  const ClusterSpec c = one_node();
  const StepEstimate half = simulate_step(in, c);
  // The memory a simulated step needs is the plan's, which sizes activations by the dtype.
  EXPECT_EQ(half.device_bytes, static_cast<double>(plan_memory(in).device_total()));
  in.working = DType::F32;
  const StepEstimate fp32 = simulate_step(in, c);
  EXPECT_EQ(fp32.device_bytes, static_cast<double>(plan_memory(in).device_total()));
  EXPECT_LT(half.memory.activations + half.memory.checkpoints,
            fp32.memory.activations + fp32.memory.checkpoints);
  // The memory-bound kernels stream working-precision tensors: half the bytes, half the time.
  EXPECT_NEAR(half.memory_bound_ms, 0.5 * fp32.memory_bound_ms, 1e-12 * fp32.memory_bound_ms);
  EXPECT_LT(half.tp_comm_ms, fp32.tp_comm_ms);
}

TEST(Cluster, GemmPeakByOperandPrecision) {
  const ClusterSpec v = cluster_preset("dgx2-v100");
  EXPECT_EQ(gemm_peak_tflops(v, DType::F16), 125);
  EXPECT_EQ(gemm_peak_tflops(v, DType::F32), 15.7);  // no TF32 before sm_80
  const ClusterSpec h = cluster_preset("dgx-h100");
  EXPECT_EQ(gemm_peak_tflops(h, DType::BF16), 989);
  EXPECT_EQ(gemm_peak_tflops(h, DType::F32), 494.7);
  // A description naming only one peak (bench_calibrate's CPU file) uses it for every GEMM.
  const ClusterSpec cpu = cluster_from_json(
      nlohmann::json{{"peak_tflops", 0.06}, {"hbm_gbps", 20.0}, {"intra_node_gbps", 8.0}});
  EXPECT_EQ(gemm_peak_tflops(cpu, DType::F32), 0.06);
  EXPECT_EQ(gemm_peak_tflops(cpu, DType::BF16), 0.06);
  EXPECT_FALSE(cluster_from_json(nlohmann::json{{"tf32", false}}, h).tf32);
}

TEST(Cluster, JsonOverridesOnlyWhatItNames) {
  const ClusterSpec v = cluster_preset("dgx2-v100");
  const ClusterSpec c = cluster_from_json(nlohmann::json{{"gemm_efficiency", 0.5}}, v);
  EXPECT_EQ(c.gemm_efficiency, 0.5);
  EXPECT_EQ(c.peak_tflops, v.peak_tflops);
  EXPECT_EQ(cluster_from_json(cluster_to_json(v)).inter_node_gbps, v.inter_node_gbps);
  const ClusterSpec a = cluster_preset("dgx-a100");
  EXPECT_EQ(cluster_from_json(cluster_to_json(a)).nics_per_collective, a.nics_per_collective);
  EXPECT_EQ(cluster_from_json(cluster_to_json(a)).nics_per_node, a.nics_per_node);
  EXPECT_THROW(cluster_from_json(nlohmann::json{{"nics_per_node", 0}}, v), InputError);
  EXPECT_THROW(cluster_preset("dgx-9000"), InputError);
  EXPECT_THROW(cluster_from_json(nlohmann::json{{"gemm_efficiency", 2.0}}, v), InputError);
  EXPECT_THROW(cluster_from_json(nlohmann::json{{"peak_tflops", "fast"}}, v), InputError);
}

}  // namespace
}  // namespace zt
