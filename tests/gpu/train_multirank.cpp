// ZeRO stages 0-3 on the CUDA backend across several ranks, one GPU each (mpirun -np N with
// N <= the node's GPUs; tests/dist/zero_stages_test.cpp is the CPU version):
//   - the paper's memory: params + grads + optimizer bytes per rank from MemoryPool (bf16):
//     16Ψ, 4Ψ + 12Ψ/Nd, 2Ψ + 14Ψ/Nd, 16Ψ/Nd,
//   - the paper's communication: CommStats' data-parallel bytes per step, 2Ψ for stages 0-2 and
//     3Ψ for stage 3 (elements of 2 bytes), counted on the NCCL groups,
//   - the same function: every stage trains to stage 0's losses, and the cuda run to the cpu
//     run's (fp32, 1e-4 relative: NCCL and MPI sum in different orders, and so do cuBLAS and
//     OpenBLAS).
// Where the node has fewer GPUs than ranks every test skips visibly (CTest: "Skipped").
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "src/train/train_device.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/support/step_metrics.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

#define ZT_REQUIRE_GPU_PER_RANK()                                                              \
  do {                                                                                         \
    if (visible_gpus() < dist::runtime().local_size())                                         \
      GTEST_SKIP() << visible_gpus() << " CUDA device(s) for " << dist::runtime().local_size() \
                   << " ranks on this node: multi-rank GPU training test skipped";             \
  } while (0)

TrainOptions small(int stage, const std::string& device) {
  TrainOptions o = test::device_gpt(device);
  o.micro_batch_size = 1;
  o.global_batch_size = 4 * dist::world().size();
  o.zero_stage = stage;
  o.overlap_comm = true;
  o.param_persistence_threshold = 300;
  return o;
}

struct Result {
  std::vector<StepMetrics> steps;
  int64_t psi = 0;
};

Result train(const TrainOptions& o) {
  TrainDevice device(o, &dist::runtime());
  Trainer t(o, device.context(), device.topology());
  Result r;
  r.steps = t.run(false);
  r.psi = t.optimizer().layout().numel();
  return r;
}

TEST(TrainMultirankCuda, SameLossesAsStage0AndAsTheCpu) {
  ZT_REQUIRE_GPU_PER_RANK();
  const Result r0 = train(small(0, "cuda"));
  const Result cpu = train(small(0, "cpu"));
  for (size_t i = 0; i < r0.steps.size(); ++i)
    EXPECT_NEAR(r0.steps[i].lm_loss, cpu.steps[i].lm_loss, 1e-4 * cpu.steps[i].lm_loss)
        << "cuda vs cpu, step " << i + 1;
  for (int stage = 1; stage <= 3; ++stage) {
    const Result r = train(small(stage, "cuda"));
    for (size_t i = 0; i < r.steps.size(); ++i)
      EXPECT_NEAR(r.steps[i].lm_loss, r0.steps[i].lm_loss, 1e-4 * r0.steps[i].lm_loss)
          << "stage " << stage << ", step " << i + 1;
  }
}

TEST(TrainMultirankCuda, MemoryAndCommunicationAreThePapers) {
  ZT_REQUIRE_GPU_PER_RANK();
  const int nd = dist::world().size();
  const bool print = dist::world().rank() == 0;
  if (print)
    std::printf("\nper-rank model states on the GPU, bf16, Nd = %d (bytes; paper in brackets)\n",
                nd);
  for (int stage = 0; stage <= 3; ++stage) {
    TrainOptions o = small(stage, "cuda");
    o.bf16 = true;
    o.global_batch_size = nd;  // one micro-batch per step: the paper's per-step accounting
    o.train_iters = 3;
    const Result r = train(o);
    const double psi = static_cast<double>(r.psi);
    const double expect[4] = {16 * psi, 4 * psi + 12 * psi / nd, 2 * psi + 14 * psi / nd,
                              16 * psi / nd};
    const StepMetrics& m = r.steps.back();
    const double states = static_cast<double>(test::peak_bytes(m, MemCategory::Params) +
                                              test::peak_bytes(m, MemCategory::Grads) +
                                              test::peak_bytes(m, MemCategory::Optimizer));
    EXPECT_NEAR(states, expect[stage], 0.01 * expect[stage]) << "stage " << stage;
    const double comm = (stage == 3 ? 3 : 2) * psi * 2;
    for (const auto& s : r.steps)
      EXPECT_NEAR(static_cast<double>(s.comm_bytes_dp), comm, 0.01 * comm + 1) << "stage " << stage;
    if (print)
      std::printf("stage %d: %12.0f [%.0f], dp bytes/step %llu [%.0f]\n", stage, states,
                  expect[stage], static_cast<unsigned long long>(m.comm_bytes_dp), comm);
  }
}

}  // namespace
}  // namespace zt
