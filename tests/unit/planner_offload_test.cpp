// The step-time model of the offload tiers (src/planner/offload_model.h) inside `simulate`: the
// offloaded update runs at its slowest tier (the disk, the host AdamW), stage 0 hides it behind
// one micro-batch's forward, ZeRO-Offload's gradients cross PCIe each micro-batch at stages 2-3,
// stage 3's parameter reads hide behind compute while their write-back does not, and a cluster
// without the bandwidths a tier needs is refused with one line naming the field.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "src/core/error.h"
#include "src/planner/cluster.h"
#include "src/planner/shape_rule.h"
#include "src/planner/step_model.h"

namespace zt {
namespace {

// A 1B GPT in bf16 on one rank of a one-GPU node: 4 micro-batches of 1.
PlanInput one_rank(int stage, bool cuda) {
  PlanInput in;
  in.model.seq_length = 1024;
  in.model.vocab_size = 50257;
  in.zero_stage = stage;
  in.working = DType::BF16;
  in.micro_batch = 1;
  in.accumulation = 4;
  in.cuda = cuda;
  in.staged_half_reductions = false;
  shape_for_parameters(1e9, in.model, 1);
  in.model.padded_vocab_size = padded_vocab_size(in.model.vocab_size, 128, 1);
  return in;
}

ClusterSpec node(double nvme_read_gbps, double nvme_write_gbps) {
  ClusterSpec c = cluster_preset("dgx-a100");
  c.gpus_per_node = 1;
  c.nvme_read_gbps = nvme_read_gbps;
  c.nvme_write_gbps = nvme_write_gbps;
  c.host_memory_gbps = 100;
  return c;
}

std::string refusal(const PlanInput& in, const ClusterSpec& c) {
  try {
    simulate_step(in, c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(OffloadModel, TheUpdateRunsAtItsSlowestTier) {
  PlanInput in = one_rank(1, true);
  in.optimizer_tier = StateTier::Nvme;
  SimOptions serial;  // the whole update in the step (none of it behind the next forward)
  serial.overlap_offloaded_step = false;
  const StepEstimate slow = simulate_step(in, node(1, 2), serial);
  const StepEstimate fast = simulate_step(in, node(2, 4), serial);
  // The disk bounds the update: twice its bandwidth, half its time.
  EXPECT_GT(slow.tiers.nvme_ms, slow.tiers.host_ms);
  EXPECT_NEAR(fast.tiers.nvme_ms, slow.tiers.nvme_ms / 2, 1e-9 * slow.tiers.nvme_ms);
  EXPECT_NEAR(slow.optimizer_ms, slow.tiers.nvme_ms + slow.tiers.pcie_ms, 1e-9 * slow.step_ms);
  EXPECT_NEAR(slow.step_ms - fast.step_ms, slow.tiers.nvme_ms / 2, 1e-6 * slow.step_ms);
  // Reading is the slower direction here: the swap file at the read bandwidth.
  const double file = static_cast<double>(slow.memory.nvme_bytes);
  EXPECT_NEAR(slow.tiers.nvme_ms, file / 1e9 * 1e3, 1e-9 * slow.tiers.nvme_ms);
  // A host slower than the disk bounds it instead.
  ClusterSpec c = node(100, 100);
  c.host_memory_gbps = 1;
  const StepEstimate host = simulate_step(in, c, serial);
  EXPECT_GT(host.tiers.host_ms, host.tiers.nvme_ms);
  EXPECT_NEAR(host.optimizer_ms, host.tiers.host_ms + host.tiers.pcie_ms, 1e-9 * host.step_ms);
  // Nothing offloaded: none of it.
  in.optimizer_tier = StateTier::Device;
  const StepEstimate device = simulate_step(in, node(1, 2), serial);
  EXPECT_EQ(device.tiers.nvme_ms + device.tiers.host_ms + device.tiers.pcie_ms, 0);
  EXPECT_LT(device.optimizer_ms, slow.optimizer_ms);
}

TEST(OffloadModel, StagesZeroToTwoHideTheUpdateBehindOneForward) {
  for (const bool cuda : {false, true}) {
    for (const int stage : {0, 1, 2}) {
      PlanInput in = one_rank(stage, cuda);
      in.optimizer_tier = StateTier::Nvme;
      in.reduce_bucket_elems = 1 << 20;  // stages 1-2: the first unit a small share
      SimOptions serial_opt;
      serial_opt.overlap_offloaded_step = false;
      const StepEstimate serial = simulate_step(in, node(1, 2), serial_opt);
      const StepEstimate overlapped = simulate_step(in, node(1, 2));
      const double forward = serial.forward_ms / in.accumulation;  // the next step's first
      // On the CPU the host AdamW shares the forward's cores: it is never hidden there.
      const double floor = cuda ? 0.0 : serial.tiers.host_ms;
      const double hidden = std::min(forward, serial.optimizer_ms - floor);
      EXPECT_GT(hidden, 0) << cuda << " stage " << stage;
      EXPECT_NEAR(serial.optimizer_ms - overlapped.optimizer_ms, hidden, 1e-9 * serial.step_ms)
          << cuda << " stage " << stage;
      EXPECT_NEAR(serial.step_ms - overlapped.step_ms, hidden, 1e-6 * serial.step_ms)
          << cuda << " stage " << stage;
    }
    // Stage 3 gathers its units ahead from the shard the update writes: nothing hidden.
    PlanInput in = one_rank(3, cuda);
    in.optimizer_tier = StateTier::Nvme;
    SimOptions serial_opt;
    serial_opt.overlap_offloaded_step = false;
    EXPECT_NEAR(simulate_step(in, node(1, 2)).optimizer_ms,
                simulate_step(in, node(1, 2), serial_opt).optimizer_ms, 1e-9)
        << cuda;
  }
}

TEST(OffloadModel, ZeroOffloadGradientsCrossPcieEachMicroBatchAtStagesTwoAndThree) {
  for (const int stage : {1, 2}) {
    PlanInput in = one_rank(stage, true);
    in.optimizer_tier = StateTier::Host;
    in.accumulation = 1;
    const double one = simulate_step(in, node(0, 0)).tiers.pcie_ms;
    in.accumulation = 4;
    const double four = simulate_step(in, node(0, 0)).tiers.pcie_ms;
    EXPECT_GT(one, 0) << stage;
    if (stage == 1)
      EXPECT_NEAR(four, one, 1e-9 * one);  // the whole gradient once, at the step
    else
      EXPECT_GT(four, 2 * one) << stage;  // each micro-batch's reduced part
  }
  // On the CPU backend the device is the host: no copies.
  PlanInput in = one_rank(2, false);
  in.optimizer_tier = StateTier::Nvme;
  EXPECT_EQ(simulate_step(in, node(1, 2)).tiers.pcie_ms, 0);
}

TEST(OffloadModel, ParameterReadsHideBehindComputeButTheirWriteBackDoesNot) {
  PlanInput in = one_rank(3, false);
  in.param_tier = StateTier::Nvme;
  const StepEstimate device_params = [&] {
    PlanInput d = in;
    d.param_tier = StateTier::Device;
    return simulate_step(d, node(1, 2));
  }();
  const StepEstimate fast = simulate_step(in, node(500, 500));
  EXPECT_GT(fast.tiers.param_read_ms, 0);
  EXPECT_LT(fast.tiers.param_read_ms, fast.forward_ms + fast.backward_ms);
  EXPECT_NEAR(fast.optimizer_ms - device_params.optimizer_ms, fast.tiers.param_write_ms,
              1e-9 * fast.step_ms);
  // A disk too slow for the gathers: the reads beyond the compute are waited for.
  const StepEstimate slow = simulate_step(in, node(0.001, 50));
  EXPECT_GT(slow.tiers.param_read_ms, slow.forward_ms + slow.backward_ms);
  EXPECT_GT(slow.optimizer_ms - device_params.optimizer_ms, slow.tiers.param_write_ms);
}

TEST(OffloadModel, AClusterWithoutTheTiersBandwidthIsRefused) {
  PlanInput in = one_rank(1, true);
  in.optimizer_tier = StateTier::Nvme;
  EXPECT_NE(refusal(in, node(0, 2)).find("nvme_read_gbps"), std::string::npos);
  in.optimizer_tier = StateTier::Host;
  ClusterSpec c = node(0, 0);
  c.host_memory_gbps = 0;
  EXPECT_NE(refusal(in, c).find("host_memory_gbps"), std::string::npos);
  EXPECT_EQ(refusal(in, node(0, 0)), "");
  // The cluster description carries the fields both ways.
  const ClusterSpec back = cluster_from_json(cluster_to_json(node(1.5, 2.5)));
  EXPECT_EQ(back.nvme_read_gbps, 1.5);
  EXPECT_EQ(back.nvme_write_gbps, 2.5);
  EXPECT_EQ(back.host_memory_gbps, 100);
}

}  // namespace
}  // namespace zt
