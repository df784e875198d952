// The pipeline schedules: completeness, Megatron-LM's orders, memory in flight, and the bubble
// their simulation gives against the closed forms.
#include "src/pipeline/schedule.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "src/core/error.h"

namespace zt::pipeline {
namespace {

using K = Step::Kind;

std::vector<ScheduleShape> shapes() {
  std::vector<ScheduleShape> out;
  for (int p : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 4, 8, 12, 16})
      for (int v : {1, 2, 3}) {
        const ScheduleShape s{p, m, v};
        if (v > 1 && (p == 1 || m % p != 0)) continue;
        out.push_back(s);
      }
  return out;
}

TEST(PipelineSchedule, EveryStepExactlyOnceAndBackwardAfterForward) {
  for (const ScheduleShape& s : shapes())
    for (int st = 0; st < s.stages; ++st) {
      std::set<std::tuple<int, int, int>> seen;
      std::set<std::pair<int, int>> forwarded;
      for (const Step& x : stage_schedule(s, st)) {
        EXPECT_TRUE(seen.insert({x.kind, x.micro_batch, x.chunk}).second);
        if (x.kind == K::Forward)
          forwarded.insert({x.micro_batch, x.chunk});
        else
          EXPECT_TRUE(forwarded.count({x.micro_batch, x.chunk}));
      }
      EXPECT_EQ(seen.size(), static_cast<size_t>(2 * s.micro_batches * s.chunks));
    }
}

TEST(PipelineSchedule, OneFOneBOrder) {
  const ScheduleShape s{4, 8, 1};
  const std::vector<Step> want{
      {K::Forward, 0, 0},  {K::Forward, 1, 0},  {K::Forward, 2, 0},  {K::Forward, 3, 0},
      {K::Backward, 0, 0}, {K::Forward, 4, 0},  {K::Backward, 1, 0}, {K::Forward, 5, 0},
      {K::Backward, 2, 0}, {K::Forward, 6, 0},  {K::Backward, 3, 0}, {K::Forward, 7, 0},
      {K::Backward, 4, 0}, {K::Backward, 5, 0}, {K::Backward, 6, 0}, {K::Backward, 7, 0}};
  EXPECT_EQ(stage_schedule(s, 0), want);
  // The last stage has no warm-up: forward and backward alternate from the start.
  const std::vector<Step> last = stage_schedule(s, 3);
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(last[static_cast<size_t>(2 * k)], (Step{K::Forward, k, 0}));
    EXPECT_EQ(last[static_cast<size_t>(2 * k + 1)], (Step{K::Backward, k, 0}));
  }
}

TEST(PipelineSchedule, InterleavedOrderIsMegatrons) {
  // P 2, v 2, m 4, stage 0: warm-up (2-0-1)·2 + (2-1)·2 = 4 forwards; micro-batches in groups of
  // P through chunk 0 then chunk 1; backwards start from the last chunk.
  const ScheduleShape s{2, 4, 2};
  const std::vector<Step> want{
      {K::Forward, 0, 0},  {K::Forward, 1, 0},  {K::Forward, 0, 1},  {K::Forward, 1, 1},
      {K::Forward, 2, 0},  {K::Backward, 0, 1}, {K::Forward, 3, 0},  {K::Backward, 1, 1},
      {K::Forward, 2, 1},  {K::Backward, 0, 0}, {K::Forward, 3, 1},  {K::Backward, 1, 0},
      {K::Backward, 2, 1}, {K::Backward, 3, 1}, {K::Backward, 2, 0}, {K::Backward, 3, 0}};
  EXPECT_EQ(stage_schedule(s, 0), want);
}

TEST(PipelineSchedule, FirstStageHoldsTheMostActivations) {
  for (int p : {2, 4, 8})
    for (int m : {1, 4, 16}) {
      const ScheduleShape s{p, m, 1};
      for (int st = 0; st < p; ++st) EXPECT_EQ(max_in_flight(s, st), std::min(m, p - st));
    }
}

TEST(PipelineSchedule, OneFOneBBubbleIsTheClosedForm) {
  for (int p : {1, 2, 4, 8})
    for (int m : {1, 2, 4, 8, 32}) {
      const SimResult r = simulate({p, m, 1}, {1.0, 2.0, 0.0});
      EXPECT_NEAR(r.bubble_fraction(), double(p - 1) / (m + p - 1), 1e-12) << p << " " << m;
      EXPECT_NEAR(r.makespan, 3.0 * (m + p - 1), 1e-9);
    }
}

TEST(PipelineSchedule, InterleavingShrinksTheBubble) {
  for (int p : {2, 4})
    for (int m : {8, 16}) {
      const double plain = simulate({p, m, 1}, {1.0, 2.0, 0.0}).bubble_fraction();
      const double two = simulate({p, m, 2}, {1.0, 2.0, 0.0}).bubble_fraction();
      EXPECT_LT(two, plain) << p << " " << m;
      // Megatron-LM's estimate for v chunks: (P-1) / (v·m + P - 1) of the run idle.
      EXPECT_NEAR(two, double(p - 1) / (2 * m + p - 1), 0.02) << p << " " << m;
    }
}

TEST(PipelineSchedule, TransferLatencyAddsToTheBubble) {
  const double none = simulate({4, 8, 1}, {1.0, 2.0, 0.0}).bubble_fraction();
  const double some = simulate({4, 8, 1}, {1.0, 2.0, 0.1}).bubble_fraction();
  EXPECT_GT(some, none);
}

TEST(PipelineSchedule, ShapesWithoutASchedule) {
  EXPECT_THROW(validate({0, 4, 1}), InputError);
  EXPECT_THROW(validate({2, 0, 1}), InputError);
  EXPECT_THROW(validate({4, 6, 2}), InputError);  // m not a multiple of P
  EXPECT_THROW(validate({1, 4, 2}), InputError);  // interleaving without a pipeline
  EXPECT_NO_THROW(validate({4, 8, 2}));
}

}  // namespace
}  // namespace zt::pipeline
