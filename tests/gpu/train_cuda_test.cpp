// The training stack on the CUDA backend against the CPU backend, in one process on one GPU:
//   - the same run (model, data, seed, layout) trains to the same losses over 10 steps: fp32
//     within 1e-4 relative (the GEMMs and reductions sum in a different order; nothing else
//     differs), bf16 within 2e-2 (each step rounds working weights and gradients to 8 bits of
//     mantissa, so the order differences are amplified by that rounding);
//   - ZeRO stages 0-3 at Nd = 1: MemoryPool's params + grads + optimizer are the paper's 16Ψ
//     (bf16, K = 12) and byte for byte what the CPU backend allocates; no data-parallel bytes;
//   - activation checkpointing with Pa+cpu (asynchronous offload to pinned memory, prefetch
//     before recompute) reproduces the all-kept run's losses, with the checkpoints in
//     host_checkpoints and none on the device;
//   - a checkpoint saved on the GPU resumes bitwise;
//   - mixtures of experts train to the CPU backend's losses and routing.
// The TrainDevice is one rank under MPI (singleton mode: no mpirun needed; the host world is
// MPI's), whose groups are each this rank alone: no NCCL communicator is created (a world of one
// needs none), so the program's many cases stay far from NCCL's per-process costs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/cuda/context.h"
#include "src/checkpoint/checkpoint.h"
#include "src/comm/runtime.h"
#include "src/planner/memory_plan.h"
#include "src/planner/train_plan.h"
#include "src/train/train_device.h"
#include "src/train/trainer.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/support/step_metrics.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

comm::MpiRuntime& runtime() {
  static int argc = 0;
  static char** argv = nullptr;
  static comm::MpiRuntime rt(argc, argv);
  return rt;
}

TrainOptions small(const std::string& device) {
  // Exact fp32 GEMMs (device_gpt): the fp32 comparisons with the CPU backend are at 1e-4.
  TrainOptions o = test::device_gpt(device);
  o.micro_batch_size = 2;
  o.global_batch_size = 4;  // two micro-batches: gradient accumulation on the device too
  o.param_persistence_threshold = 300;
  return o;
}

std::vector<StepMetrics> train(const TrainOptions& o) {
  TrainDevice device(o, &runtime());
  EXPECT_EQ(device.nccl_communicators(), 0) << "a world of one needs no NCCL communicator";
  Trainer t(o, device.context(), device.topology());
  return t.run(false);
}

void expect_same_losses(const std::vector<StepMetrics>& got, const std::vector<StepMetrics>& want,
                        double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(std::isfinite(got[i].lm_loss)) << what << " step " << i + 1;
    EXPECT_NEAR(got[i].lm_loss, want[i].lm_loss, rel * want[i].lm_loss)
        << what << " step " << i + 1;
    EXPECT_NEAR(got[i].grad_norm, want[i].grad_norm, 10 * rel * want[i].grad_norm + 1e-6)
        << what << " grad norm, step " << i + 1;
  }
}

TEST(TrainCuda, Fp32MatchesTheCpuBackend) {
  ZT_REQUIRE_GPU();
  for (int stage : {0, 3}) {
    TrainOptions c = small("cuda"), h = small("cpu");
    c.zero_stage = h.zero_stage = stage;
    expect_same_losses(train(c), train(h), 1e-4, "fp32 stage " + std::to_string(stage));
  }
}

TEST(TrainCuda, Bf16MatchesTheCpuBackend) {
  ZT_REQUIRE_GPU();
  for (int stage : {0, 2}) {
    TrainOptions c = small("cuda"), h = small("cpu");
    c.bf16 = h.bf16 = true;
    c.zero_stage = h.zero_stage = stage;
    expect_same_losses(train(c), train(h), 2e-2, "bf16 stage " + std::to_string(stage));
  }
}

// Mixtures of experts (4 experts of top 2, a gated shared expert, a capacity that drops): the
// routing kernels, the grouped GEMMs on cuBLASLt and the routing's host round trips give the CPU
// backend's losses and routing. A near-tie the two backends break differently would move the
// loss by more than rounding: the routing statistics say where that happened.
TEST(TrainCuda, MixtureOfExpertsMatchesTheCpuBackend) {
  ZT_REQUIRE_GPU();
  for (int stage : {0, 3}) {
    TrainOptions c = small("cuda"), h = small("cpu");
    for (TrainOptions* o : {&c, &h}) {
      o->zero_stage = stage;
      o->num_experts = 4;
      o->moe_router_topk = 2;
      o->moe_ffn_hidden_size = 32;
      o->moe_aux_loss_coeff = 0.01;
      o->moe_expert_capacity_factor = 1.0;
      o->moe_shared_expert_intermediate_size = 32;
      o->moe_shared_expert_gate = true;
    }
    const std::vector<StepMetrics> got = train(c), want = train(h);
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
      for (size_t l = 0; l < got[i].moe.layers.size(); ++l)
        EXPECT_EQ(got[i].moe.layers[l].dropped_fraction, want[i].moe.layers[l].dropped_fraction)
            << "stage " << stage << " step " << i + 1 << " layer " << l;
    expect_same_losses(got, want, 1e-4, "MoE fp32 stage " + std::to_string(stage));
  }
}

TEST(TrainCuda, StageMemoryIsThePapersAndTheCpuBackends) {
  ZT_REQUIRE_GPU();
  std::printf("\nper-rank model states on %s, bf16, Nd = 1 (bytes; paper: 16 psi)\n",
              TrainDevice(small("cuda"), nullptr).device_name().c_str());
  for (int stage = 0; stage <= 3; ++stage) {
    TrainOptions c = small("cuda"), h = small("cpu");
    c.bf16 = h.bf16 = true;
    c.zero_stage = h.zero_stage = stage;
    c.global_batch_size = h.global_batch_size = 2;  // one micro-batch per step
    c.train_iters = h.train_iters = 3;
    const auto gm = train(c), hm = train(h);
    const StepMetrics &g = gm.back(), &k = hm.back();
    const double psi = static_cast<double>(g.num_parameters);
    const double states = static_cast<double>(test::peak_bytes(g, MemCategory::Params) +
                                              test::peak_bytes(g, MemCategory::Grads) +
                                              test::peak_bytes(g, MemCategory::Optimizer));
    // The vocabulary padding is in the layout but not in num_parameters: a few percent.
    EXPECT_NEAR(states, 16 * psi, 0.05 * 16 * psi) << "stage " << stage;
    for (MemCategory m : {MemCategory::Params, MemCategory::Grads, MemCategory::Optimizer,
                          MemCategory::Activations, MemCategory::Checkpoints})
      EXPECT_EQ(test::peak_bytes(g, m), test::peak_bytes(k, m))
          << "stage " << stage << " " << mem_category_name(m);
    for (const auto& s : gm) EXPECT_EQ(s.comm_bytes_dp, 0u) << "stage " << stage;
    std::printf("stage %d: params %zu grads %zu optimizer %zu = %.0f [%.0f] buffers %zu\n", stage,
                test::peak_bytes(g, MemCategory::Params), test::peak_bytes(g, MemCategory::Grads),
                test::peak_bytes(g, MemCategory::Optimizer), states, 16 * psi,
                test::peak_bytes(g, MemCategory::Buffers));
  }
}

// MemoryPool's peak per category against the plan of the same options, stages 0-3, Pa+cpu and
// stage 0 with --working-params cast:
// equal, except buffers, which also hold the kernels' grow-only scratch (CUB temp storage,
// column partials; the plan does not count it yet): measured buffers = plan + that scratch.
// The scalar reducers are in pinned host memory (and empty for a world of one), no NCCL
// communicator exists, so no barrier word; tests/unit/train_cuda_plan_test.cpp checks the rest of
// this equality on the CPU through the same code paths.
TEST(TrainCuda, MemoryIsThePlanPlusTheGrownScratch) {
  ZT_REQUIRE_GPU();
  for (int variant = 0; variant <= 5; ++variant) {
    TrainOptions c = small("cuda");
    c.bf16 = true;
    c.zero_stage = variant % 4;
    if (variant == 4) {
      c.zero_stage = 2;
      c.checkpoint_activations = c.partition_activations = c.cpu_checkpointing = true;
    }
    if (variant == 5) {
      c.zero_stage = 0;
      c.working_params = "cast";
    }
    c.train_iters = 2;
    const StepMetrics m = train(c).back();
    const MemoryPlan p = plan_memory(plan_input_from(c, 1));
    const std::string what = "variant " + std::to_string(variant);
    EXPECT_EQ(test::peak_bytes(m, MemCategory::Params), p.params) << what;
    EXPECT_EQ(test::peak_bytes(m, MemCategory::Grads), p.grads) << what;
    EXPECT_EQ(test::peak_bytes(m, MemCategory::Optimizer), p.optimizer) << what;
    EXPECT_EQ(test::peak_bytes(m, MemCategory::Activations), p.activations) << what;
    EXPECT_EQ(test::peak_bytes(m, MemCategory::Checkpoints), p.checkpoints) << what;
    const size_t scratch = cuda::grown_scratch_bytes();
    EXPECT_EQ(test::peak_bytes(m, MemCategory::Buffers), p.buffers + scratch)
        << what << ", scratch " << scratch;
    std::printf("%s: buffers %zu = plan %zu + grown scratch %zu\n", what.c_str(),
                test::peak_bytes(m, MemCategory::Buffers), p.buffers, scratch);
  }
}

// Stage 0 without a working copy: each acquire casts the master's span on the device with the
// kernel that makes the stored copy, so the losses are the stored copy's, bit for bit.
TEST(TrainCuda, CastWorkingParamsAreTheStoredBits) {
  ZT_REQUIRE_GPU();
  TrainOptions stored = small("cuda");
  stored.bf16 = true;
  stored.checkpoint_activations = true;  // recompute acquires a third time
  TrainOptions cast = stored;
  cast.working_params = "cast";
  const auto a = train(stored), b = train(cast);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].lm_loss, b[i].lm_loss) << "step " << i + 1;
    EXPECT_EQ(a[i].grad_norm, b[i].grad_norm) << "step " << i + 1;
  }
  EXPECT_EQ(test::peak_bytes(b.back(), MemCategory::Params), 0u);
}

TEST(TrainCuda, CpuCheckpointingReproducesTheKeptRun) {
  ZT_REQUIRE_GPU();
  TrainOptions kept = small("cuda");
  TrainOptions off = kept;
  off.checkpoint_activations = off.partition_activations = off.cpu_checkpointing = true;
  off.zero_stage = 2;
  kept.zero_stage = 2;
  const auto a = train(kept), b = train(off);
  expect_same_losses(b, a, 1e-6, "Pa+cpu");
  EXPECT_GT(test::peak_bytes(b.back(), MemCategory::HostCheckpoints), 0u);
  EXPECT_EQ(test::peak_bytes(b.back(), MemCategory::Checkpoints), 0u);
}

TEST(TrainCuda, CheckpointResumesBitwise) {
  ZT_REQUIRE_GPU();
  const std::string dir = (std::filesystem::temp_directory_path() / "zt_gpu_ckpt_test").string();
  std::filesystem::remove_all(dir);
  TrainOptions o = small("cuda");
  o.zero_stage = 3;
  const auto whole = train(o);
  {
    TrainOptions first = o;
    first.train_iters = 4;
    first.save = dir;
    TrainDevice device(first, &runtime());
    Trainer t(first, device.context(), device.topology());
    t.run(false);  // saves at the end
  }
  TrainDevice device(o, &runtime());
  Trainer t(o, device.context(), device.topology());
  ASSERT_EQ(t.load_checkpoint(dir), 4);
  const auto rest = t.run(false);  // steps 5 to 10
  ASSERT_EQ(rest.size() + 4, whole.size());
  for (size_t i = 0; i < rest.size(); ++i)
    EXPECT_EQ(rest[i].lm_loss, whole[i + 4].lm_loss) << "step " << i + 5;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace zt
