// The plan for --device cuda against what the stack allocates on the CUDA backend's paths, on the
// CPU: cpu_staging_backend() keeps the CUDA backend's memory discipline (host_accessible() false:
// the stack stages through a host pool of its own and keeps its scalar reducers there), so the
// device pool's peak per category must be the CUDA plan, except the bytes the CUDA backend itself
// takes (MemoryPlan::backend_buffers: its GEMM workspace, kernels/backend_memory.h), which no
// CPU kernel allocates. The same variants as tests/gpu/train_cuda_test's
// MemoryIsThePlanPlusTheGrownScratch, which checks the rest on a GPU. A world of one: no NCCL
// communicator (tests/dist/planner_test.cpp checks the scalar reducers on two ranks). Which groups
// get an NCCL communicator, and NCCL's planned memory, for several layouts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/backend.h"
#include "kernels/backend_memory.h"
#include "src/comm/nccl_groups.h"
#include "src/comm/self_communicator.h"
#include "src/comm/topology.h"
#include "src/model/gpt.h"
#include "src/planner/train_plan.h"
#include "src/train/trainer.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

TrainOptions cuda_shaped(int variant) {
  TrainOptions o = test::device_gpt("cpu");
  o.micro_batch_size = 2;
  o.global_batch_size = 4;
  o.param_persistence_threshold = 300;
  o.bf16 = true;
  o.train_iters = 2;
  o.zero_stage = variant % 4;
  if (variant == 4) {
    o.zero_stage = 2;
    o.checkpoint_activations = o.partition_activations = o.cpu_checkpointing = true;
  }
  if (variant == 5) {
    o.zero_stage = 0;
    o.working_params = "cast";
  }
  return o;
}

TEST(CudaPlan, DevicePoolIsThePlanLessTheBackendsOwnBuffers) {
  for (int variant = 0; variant <= 5; ++variant) {
    const TrainOptions o = cuda_shaped(variant);
    MemoryPool device(make_staging_device_allocator()), host(make_host_allocator());
    const DeviceContext ctx(cpu_staging_backend(), device, host);
    ASSERT_TRUE(ctx.needs_staging());
    comm::SelfWorld world(cpu_staging_backend());
    Trainer t(o, ctx, world.topology());
    t.run(false);
    TrainOptions c = o;
    c.device = "cuda";
    const MemoryPlan p = plan_memory(plan_input_from(c, 1));
    const std::string what = "variant " + std::to_string(variant);
    auto peak = [&](MemCategory k) { return device.peak(k); };
    EXPECT_EQ(peak(MemCategory::Params), p.params) << what;
    EXPECT_EQ(peak(MemCategory::Grads), p.grads) << what;
    EXPECT_EQ(peak(MemCategory::Optimizer), p.optimizer) << what;
    EXPECT_EQ(peak(MemCategory::Activations), p.activations) << what;
    EXPECT_EQ(peak(MemCategory::Checkpoints), p.checkpoints) << what;
    EXPECT_EQ(peak(MemCategory::HostCheckpoints), 0u) << what;
    EXPECT_EQ(host.peak(MemCategory::HostCheckpoints), p.host_checkpoints) << what;
    EXPECT_EQ(p.backend_buffers, kCudaGemmWorkspaceBytes) << what;
    EXPECT_EQ(peak(MemCategory::Buffers) + p.backend_buffers, p.buffers) << what;
    EXPECT_EQ(p.nccl_communicators, 0) << what << ": a world of one has no NCCL communicator";
    EXPECT_EQ(p.nccl_bytes, 0u) << what;
  }
}

// The same variants on the CPU backend itself: the pool's peak per category is the CPU plan,
// whose activations include the CPU kernels' per-thread scratch (attention's tiles; in bf16 on
// oneDNN the batched path's packed head groups), which the model takes from the pool. Without
// that term in the plan, or with the kernels growing buffers of their own, the activations (or
// the step, which checks each task's need against the bound slice) would differ. fp32 takes the
// tiled path.
TEST(CudaPlan, TheCpuPoolIsTheCpuPlanWithTheKernelScratch) {
  for (int variant = 0; variant <= 6; ++variant) {
    TrainOptions o = cuda_shaped(variant % 6);
    if (variant == 6) o.bf16 = false;
    MemoryPool pool(make_host_allocator());
    comm::SelfWorld world;
    Trainer t(o, pool, world.topology());
    t.run(false);
    PlanInput in = plan_input_from(o, 1);
    in.staged_half_reductions = false;  // a world of one: no MPI staging
    const MemoryPlan p = plan_memory(in);
    const std::string what = "variant " + std::to_string(variant);
    GptConfig c = t.config();
    c.dtype = o.bf16 ? DType::BF16 : DType::F32;
    const size_t scratch = Gpt::kernel_scratch_bytes(c, o.micro_batch_size, 1);
    EXPECT_EQ(scratch, cpu_attention_scratch_per_thread(o.micro_batch_size, o.seq_length,
                                                        o.hidden_size, o.num_attention_heads,
                                                        o.num_attention_heads, c.dtype) *
                           static_cast<size_t>(cpu_kernel_threads()))
        << what;
    EXPECT_GT(scratch, 0u) << what;
    for (size_t k = 0; k < kNumMemCategories; ++k) {
      const auto cat = static_cast<MemCategory>(k);
      const size_t planned = cat == MemCategory::Params            ? p.params
                             : cat == MemCategory::Grads           ? p.grads
                             : cat == MemCategory::Optimizer       ? p.optimizer
                             : cat == MemCategory::Activations     ? p.activations
                             : cat == MemCategory::Checkpoints     ? p.checkpoints
                             : cat == MemCategory::HostCheckpoints ? p.host_checkpoints
                             : cat == MemCategory::Buffers         ? p.buffers
                                                                   : 0;
      EXPECT_EQ(pool.peak(cat), planned) << what << ": " << mem_category_name(cat);
    }
  }
}

// The CPU plan of the same run has no backend buffers and no NCCL.
TEST(CudaPlan, TheCpuPlanHasNoBackendBuffersOrNccl) {
  const MemoryPlan p = plan_memory(plan_input_from(cuda_shaped(0), 1));
  EXPECT_EQ(p.backend_buffers, 0u);
  EXPECT_EQ(p.nccl_communicators, 0);
}

// Which groups get an NCCL communicator: the world and every group of more than one rank, for
// every rank of a few layouts, against the grid's own group sizes (the sizes NcclCommunicator's
// split sees), and the hand count of each layout.
TEST(CudaPlan, OnlyGroupsOfMoreThanOneRankGetNccl) {
  struct Case {
    int tp, dp, pp;
    std::vector<int> per_stage;  // NCCL communicators of a rank of each stage
  };
  const std::vector<Case> cases{
      {1, 1, 1, {0}},           // a world of one: none
      {1, 4, 1, {2}},           // world, dp (tp, pp, mp are one rank)
      {4, 1, 1, {3}},           // world, tp, mp
      {2, 2, 2, {6, 6}},        // world, tp, dp, pp, mp, embedding (both ends)
      {1, 2, 3, {5, 4, 5}},     // world, dp, pp, mp, embedding (ends; the middle stage alone)
      {1, 1, 4, {4, 4, 4, 4}},  // world, pp, mp, embedding (ends, and the two middle stages)
      {2, 1, 2, {5, 5}},        // world, tp, pp, mp, embedding
  };
  for (const Case& c : cases) {
    const comm::ParallelGrid grid(c.tp * c.dp * c.pp, c.tp, c.pp);
    for (int rank = 0; rank < grid.world(); ++rank) {
      const int stage = grid.coord_of(rank).pp;
      const comm::NcclGroups g = comm::nccl_groups(c.tp, c.dp, c.pp, stage);
      const std::string what = fmt::format("tp {} dp {} pp {} rank {}", c.tp, c.dp, c.pp, rank);
      EXPECT_EQ(g.count(), c.per_stage[static_cast<size_t>(stage)]) << what;
      EXPECT_EQ(g.world, grid.world() > 1) << what;
      auto size = [&](comm::GroupKind k) {
        return static_cast<int>(grid.group_ranks(k, rank).size());
      };
      if (grid.world() > 1) {
        EXPECT_EQ(g.tp, comm::group_needs_nccl(size(comm::GroupKind::Tp))) << what;
        EXPECT_EQ(g.dp, comm::group_needs_nccl(size(comm::GroupKind::Dp))) << what;
        EXPECT_EQ(g.pp, comm::group_needs_nccl(size(comm::GroupKind::Pp))) << what;
        EXPECT_EQ(g.mp, comm::group_needs_nccl(size(comm::GroupKind::Mp))) << what;
      }
    }
  }
  EXPECT_FALSE(comm::group_needs_nccl(1));
  EXPECT_TRUE(comm::group_needs_nccl(2));
}

// The CUDA plan counts those communicators and plans NCCL's memory for each (nccl_groups.h: 32
// channels x 2 ring connections x NCCL_BUFFSIZE 4 MiB = 256 MiB), outside the device total; the
// CPU plan has neither.
TEST(CudaPlan, NcclMemoryIsPlannedPerCommunicator) {
  EXPECT_EQ(comm::kNcclPlannedBytesPerCommunicator, size_t{256} << 20);
  TrainOptions o = cuda_shaped(1);
  o.device = "cuda";
  PlanInput in = plan_input_from(o, 1);
  in.dp = 4;
  const MemoryPlan p = plan_memory(in);
  EXPECT_EQ(p.nccl_communicators, 2);
  EXPECT_EQ(p.nccl_bytes, 2 * comm::kNcclPlannedBytesPerCommunicator);
  o.num_layers = 4;
  o.tensor_model_parallel_size = 2;
  test::set_pipeline(o, 2, 1);
  o.global_batch_size = 8;
  const std::vector<MemoryPlan> stages = plan_stages(plan_input_from(o, 2));  // tp 2 dp 2 pp 2
  ASSERT_EQ(stages.size(), 2u);
  for (const MemoryPlan& stage : stages) {
    EXPECT_EQ(stage.nccl_communicators, 6) << "stage " << stage.stage;
    EXPECT_EQ(stage.nccl_bytes, 6 * comm::kNcclPlannedBytesPerCommunicator);
  }
  o.device = "cpu";
  EXPECT_EQ(plan_stages(plan_input_from(o, 2))[0].nccl_bytes, 0u);
}

}  // namespace
}  // namespace zt
