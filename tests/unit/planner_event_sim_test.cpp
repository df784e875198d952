// The simulator's event model on schedules small enough to compute by hand: communication fully
// hidden, fully exposed and partly hidden behind compute; streams that share one resource; a
// deadlock; the pipeline's bubble against its closed forms at uniform stage times; ZeRO-3's
// gather issue points under --prefetch-bucket-size and --max-live-parameters.
#include <gtest/gtest.h>

#include "src/core/error.h"
#include "src/planner/cluster.h"
#include "src/planner/event_sim.h"
#include "src/planner/prefetch_model.h"

namespace zt {
namespace {

// Two units of 10 ms compute; the second needs a gather of `gather` ms, issued at the step's
// start (prefetched) or only once the first unit has finished.
double two_units(double gather, bool prefetched) {
  sim::Schedule s;
  const int C = s.resource("compute"), G = s.resource("dp-gather");
  const int u0 = s.add(C, 10);
  const int g = prefetched ? s.add(G, gather) : s.add(G, gather, {u0});
  s.add(C, 10, {u0, g});
  return s.run().makespan;
}

TEST(EventSim, CommunicationIssuedAheadHidesBehindCompute) {
  EXPECT_DOUBLE_EQ(two_units(4, true), 20);  // 4 ms under the first unit's 10
}

TEST(EventSim, CommunicationIssuedLateIsExposed) {
  EXPECT_DOUBLE_EQ(two_units(4, false), 24);
}

TEST(EventSim, CommunicationLongerThanTheComputeIsPartlyHidden) {
  EXPECT_DOUBLE_EQ(two_units(15, true), 25);  // 10 of 15 hidden, 5 exposed
}

TEST(EventSim, StreamsSharingOneResourceDoNotOverlap) {
  sim::Schedule s;
  s.share("dp-gather", "compute");  // CPU ranks: collectives progress on the compute's cores
  const int C = s.resource("compute"), G = s.resource("dp-gather");
  EXPECT_EQ(C, G);
  const int u0 = s.add(C, 10);
  const int g = s.add(G, 4);
  s.add(C, 10, {u0, g});
  const sim::Schedule::Result r = s.run();
  EXPECT_DOUBLE_EQ(r.makespan, 24);
  EXPECT_DOUBLE_EQ(r.busy[static_cast<size_t>(C)], 24);
}

TEST(EventSim, ReductionsWaitedAtTheStepEnd) {
  // Backward of three units of 5 ms, each unit's reduce-scatter (3 ms) issued as it finishes,
  // then the optimizer (2 ms) after all of them: only the last reduction is exposed.
  sim::Schedule s;
  const int C = s.resource("compute"), R = s.resource("dp-reduce");
  std::vector<int> deps;
  int last = -1;
  for (int u = 0; u < 3; ++u) {
    last = last < 0 ? s.add(C, 5) : s.add(C, 5, {last});
    deps.push_back(s.add(R, 3, {last}));
  }
  deps.push_back(last);
  s.add(C, 2, deps);
  EXPECT_DOUBLE_EQ(s.run().makespan, 15 + 3 + 2);
}

TEST(EventSim, TasksMayDependOnLaterTasksButNotInACycle) {
  sim::Schedule s;
  const int A = s.resource("a"), B = s.resource("b");
  const int x = s.add(A, 1);
  const int y = s.add(B, 2);
  s.depend(x, y);  // x waits for y, added after it
  EXPECT_DOUBLE_EQ(s.run().makespan, 3);
  s.depend(y, x);
  EXPECT_THROW(s.run(), Error);
}

TEST(EventSim, OneFOneBBubbleIsTheClosedForm) {
  // Uniform stages, no transfer time: makespan (m + P - 1)(f + b), bubble (P-1)/(m+P-1).
  for (int P : {2, 4, 8})
    for (int m : {1, 4, 8, 16}) {
      const std::vector<double> f(static_cast<size_t>(P), 1.0), b(static_cast<size_t>(P), 2.0);
      const sim::PipelineRun r = sim::pipeline_events({P, m, 1}, f, b, 0);
      EXPECT_DOUBLE_EQ(r.makespan, (m + P - 1) * 3.0) << "P " << P << " m " << m;
      EXPECT_NEAR(r.bubble_fraction, (P - 1.0) / (m + P - 1.0), 1e-12);
    }
}

TEST(EventSim, InterleavingDividesTheBubbleByTheChunks) {
  // Megatron's interleaved schedule at uniform times: the fill and drain shrink to
  // (P - 1)(f + b) / v, so the bubble fraction is (P-1)/(v·m + P - 1).
  for (int P : {2, 4})
    for (int v : {2, 3})
      for (int m : {P, 2 * P, 4 * P}) {
        const std::vector<double> f(static_cast<size_t>(P), 1.0 * v),
            b(static_cast<size_t>(P), 2.0 * v);
        const sim::PipelineRun r = sim::pipeline_events({P, m, v}, f, b, 0);
        EXPECT_NEAR(r.makespan, m * 3.0 * v + (P - 1) * 3.0, 1e-9)
            << "P " << P << " v " << v << " m " << m;
      }
}

TEST(EventSim, TransfersLengthenThePipeline) {
  const std::vector<double> f(4, 1.0), b(4, 2.0);
  const double none = sim::pipeline_events({4, 8, 1}, f, b, 0).makespan;
  const double some = sim::pipeline_events({4, 8, 1}, f, b, 0.5).makespan;
  // At least the fill's and the drain's P - 1 hand-overs each; at most one each way per
  // micro-batch on the critical path.
  EXPECT_GE(some, none + 2 * 3 * 0.5);
  EXPECT_LE(some, none + 2 * (8 + 3) * 0.5);
  // On a shared resource the sends also take the sender's compute time.
  EXPECT_GT(sim::pipeline_events({4, 8, 1}, f, b, 0.5, false).makespan, some);
}

TEST(PrefetchModel, BucketSizeSetsHowFarAheadGathersGo) {
  const std::vector<int64_t> u{10, 10, 10, 10};
  EXPECT_EQ(zero3_gather_issue(u, 0, 1000), (std::vector<int>{0, 1, 2, 3}));   // no prefetch
  EXPECT_EQ(zero3_gather_issue(u, 10, 1000), (std::vector<int>{0, 0, 1, 2}));  // one ahead
  EXPECT_EQ(zero3_gather_issue(u, 20, 1000), (std::vector<int>{0, 0, 0, 1}));  // two ahead
  // A bucket larger than the model: as far as the slots go (four units, two of them for what the
  // model holds, so two ahead).
  EXPECT_EQ(zero3_gather_issue(u, 1000, 1000), (std::vector<int>{0, 0, 0, 1}));
}

TEST(PrefetchModel, MaxLiveParametersCapsWhatIsGatheredAtOnce) {
  const std::vector<int64_t> u{10, 10, 10, 10};
  // Two units' worth of the bound is what the model itself holds; the rest may be ahead.
  EXPECT_EQ(zero3_gather_issue(u, 1000, 20), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(zero3_gather_issue(u, 1000, 30), (std::vector<int>{0, 0, 1, 2}));
  // DeepSpeed's loop takes a unit while less than the bucket is ahead, so a unit larger than the
  // bucket is still prefetched.
  EXPECT_EQ(zero3_gather_issue({10, 50, 10}, 20, 1000), (std::vector<int>{0, 0, 1}));
}

}  // namespace
}  // namespace zt

namespace zt {
namespace {

TEST(CalibrationTables, CollectivesInterpolateInLogSizeAndScaleBeyondTheLargest) {
  ClusterSpec c;
  c.comm_table = {{"all_gather", 4, 1000, 10}, {"all_gather", 4, 100000, 1000}};
  EXPECT_NEAR(table_comm_ms(c, "all_gather", 4, 10000), 100e-3, 1e-9);  // halfway in log-log
  EXPECT_DOUBLE_EQ(table_comm_ms(c, "all_gather", 4, 10), 10e-3);       // the smallest's time
  EXPECT_DOUBLE_EQ(table_comm_ms(c, "all_gather", 4, 200000), 2.0);     // linear in bytes
  EXPECT_DOUBLE_EQ(table_comm_ms(c, "all_gather", 8, 1000), 10e-3);     // nearest group size
  EXPECT_LT(table_comm_ms(c, "all_reduce", 4, 1000), 0);                // not measured
}

TEST(CalibrationTables, GemmsTakeTheNearestMeasuredShapesRate) {
  ClusterSpec c;
  c.gemm_table = {{"fp32", "fwd", 512, 768, 256, 100}, {"fp32", "fwd", 512, 4096, 256, 50}};
  // 2·512·768·256 flops at 100 GFLOP/s; a shape near the second takes its rate.
  EXPECT_NEAR(table_gemm_ms(c, DType::F32, "fwd", 512, 768, 256),
              2.0 * 512 * 768 * 256 / 1e11 * 1e3, 1e-12);
  EXPECT_NEAR(table_gemm_ms(c, DType::F32, "fwd", 512, 4000, 256),
              2.0 * 512 * 4000 * 256 / 5e10 * 1e3, 1e-12);
  EXPECT_LT(table_gemm_ms(c, DType::BF16, "fwd", 512, 768, 256), 0);
}

}  // namespace
}  // namespace zt
