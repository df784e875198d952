// Data-parallel training (ZeRO stage 0) on every rank count CTest runs it with: the same losses
// and final parameters as one rank with the same global batch, the paper's 2Ψ bytes on the dp
// group per step, and overlap changing nothing numerically.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "src/comm/self_communicator.h"
#include "src/comm/topology.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/dist/train_testing.h"
#include "tests/support/max_rel_error.h"

namespace zt {
namespace {

TrainOptions small() {
  TrainOptions o = test::small_gpt(0.1, 20);
  o.make_vocab_size_divisible_by = 64;
  o.reduce_bucket_size = 5000;  // several buckets for this model
  o.overlap_comm = true;
  return o;
}

struct TrainRun {
  std::vector<StepMetrics> steps;
  std::vector<float> params;
};

TrainRun run(const TrainOptions& o, bool distributed) {
  MemoryPool local(make_host_allocator());
  comm::Topology topo(dist::world(), 1);
  comm::SelfWorld alone;
  Trainer t(o, distributed ? dist::pool() : local, distributed ? topo : alone.topology());
  TrainRun r;
  r.steps = t.run(false);
  const float* p = t.optimizer().master_params().f32();
  r.params.assign(p, p + t.optimizer().layout().numel());
  return r;
}

TEST(DataParallel, MatchesOneRankWithTheSameGlobalBatch) {
  const TrainOptions o = small();
  const TrainRun alone = run(o, false), dp = run(o, true);
  ASSERT_EQ(alone.steps.size(), dp.steps.size());
  for (size_t i = 0; i < dp.steps.size(); ++i)
    EXPECT_NEAR(dp.steps[i].lm_loss, alone.steps[i].lm_loss, 1e-5 * alone.steps[i].lm_loss)
        << "step " << i + 1;
  EXPECT_LE(test::max_rel_error(dp.params, alone.params), 1e-5);
  EXPECT_LT(dp.steps.back().lm_loss, dp.steps.front().lm_loss);
}

TEST(DataParallel, DpBytesPerStepAreTwicePsiTimesElementSize) {
  for (bool bf16 : {false, true}) {
    TrainOptions o = small();
    o.bf16 = bf16;
    o.train_iters = 2;
    const TrainRun r = run(o, true);
    const int dp = dist::world().size();
    const auto psi = static_cast<uint64_t>(r.params.size());
    const uint64_t expect = dp > 1 ? 2 * psi * (bf16 ? 2 : 4) : 0;
    for (const auto& m : r.steps) {
      EXPECT_EQ(m.comm_bytes_dp, expect) << (bf16 ? "bf16" : "fp32");
      EXPECT_EQ(m.comm_bytes_tp, 0u);
    }
    if (dist::world().rank() == 0)
      std::printf("dp=%d %s: comm_bytes.dp per step %llu = 2 x %llu params x %d bytes\n", dp,
                  bf16 ? "bf16" : "fp32", static_cast<unsigned long long>(expect),
                  static_cast<unsigned long long>(psi), bf16 ? 2 : 4);
  }
}

TEST(DataParallel, OverlapAndBucketSizeChangeNothingNumerically) {
  TrainOptions a = small(), b = small();
  a.train_iters = b.train_iters = 5;
  b.overlap_comm = false;
  b.reduce_bucket_size = 1'000'000;  // one bucket
  const TrainRun ra = run(a, true), rb = run(b, true);
  for (size_t i = 0; i < ra.steps.size(); ++i)
    EXPECT_EQ(ra.steps[i].lm_loss, rb.steps[i].lm_loss) << "step " << i + 1;
  EXPECT_EQ(ra.params, rb.params);
}

}  // namespace
}  // namespace zt
