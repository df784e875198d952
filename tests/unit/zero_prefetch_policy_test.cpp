// Stage 3's prefetch and release policy as a pure function of the recorded order, the unit sizes
// and the two limits (--prefetch-bucket-size, --max-live-parameters).
#include <gtest/gtest.h>

#include <vector>

#include "src/zero/prefetch_policy.h"

namespace zt {
namespace {

// A model's step as the store sees it: forward acquires units 0..n-1 one at a time, backward
// n-1..0 (the last unit is still resident at the turn).
std::vector<UnitEvent> forward_backward(int n) {
  std::vector<UnitEvent> e;
  for (int u = 0; u < n; ++u) e.insert(e.end(), {{u, true}, {u, false}});
  for (int u = n - 1; u >= 0; --u) e.insert(e.end(), {{u, true}, {u, false}});
  return e;
}

PrefetchSummary run(int n, int64_t bucket, int64_t live, int64_t unit = 100) {
  const std::vector<int64_t> sizes(static_cast<size_t>(n), unit);
  const std::vector<char> persistent(static_cast<size_t>(n), 0);
  return simulate_prefetch(forward_backward(n), sizes, persistent, unit, {bucket, live});
}

TEST(PrefetchPolicy, SlotsFollowTheTwoLimits) {
  // Two for what the model holds, plus ceil(B / m) prefetch slots within floor((L - 2m) / m).
  EXPECT_EQ(gathered_slots(10, 100, {1, 1'000'000}), 3);
  EXPECT_EQ(gathered_slots(10, 100, {100, 1'000'000}), 3);
  EXPECT_EQ(gathered_slots(10, 100, {101, 1'000'000}), 4);
  EXPECT_EQ(gathered_slots(10, 100, {250, 1'000'000}), 5);
  EXPECT_EQ(gathered_slots(10, 100, {1'000, 500}), 5);            // (500 - 200) / 100 = 3
  EXPECT_EQ(gathered_slots(10, 100, {1'000, 499}), 4);            // 2.99 -> 2
  EXPECT_EQ(gathered_slots(10, 100, {1'000, 150}), 2);            // no room: no prefetch
  EXPECT_EQ(gathered_slots(10, 100, {100'000, 10'000'000}), 10);  // never more than the units
  EXPECT_EQ(gathered_slots(1, 100, {100, 1'000}), 1);
  EXPECT_EQ(gathered_slots(0, 100, {100, 1'000}), 0);
}

TEST(PrefetchPolicy, BucketSetsHowManyUnitsAreAhead) {
  for (int64_t bucket : {1, 100, 150, 250, 300, 301, 2'000}) {
    const PrefetchSummary s = run(10, bucket, 1'000'000);
    // As DeepSpeed's loop: units are taken while fewer than `bucket` elements are ahead.
    const int ahead = static_cast<int>(std::min<int64_t>((bucket + 99) / 100, 8));
    EXPECT_EQ(s.max_ahead_units, ahead) << "bucket " << bucket;
    EXPECT_EQ(s.peak_live_elems, 100 * (1 + ahead)) << "bucket " << bucket;
    EXPECT_LE(s.peak_live_elems, static_cast<int64_t>(s.slots) * 100);
    // Prefetching only moves gathers earlier: 19 a step (the last unit stays for backward).
    EXPECT_EQ(s.gathers, 2 * 19) << "bucket " << bucket;
  }
}

TEST(PrefetchPolicy, LiveBoundCapsWhatIsAhead) {
  for (int64_t live : {150, 200, 299, 300, 450, 500, 700}) {
    const PrefetchSummary s = run(10, 1'000'000, live);
    const int ahead = live >= 200 ? static_cast<int>((live - 200) / 100) : 0;
    EXPECT_EQ(s.max_ahead_units, ahead) << "live " << live;
    // The model's own unit is always there; beyond it, never more than the bound.
    EXPECT_EQ(s.peak_live_elems, 100 * (1 + ahead)) << "live " << live;
    EXPECT_LE(s.peak_live_elems, std::max<int64_t>(live, 200)) << "live " << live;
    EXPECT_EQ(s.gathers, 2 * 19);
  }
}

TEST(PrefetchPolicy, AUnitLargerThanTheBoundRunsAlone) {
  const PrefetchSummary s = run(4, 1'000, 10, 1'000);
  EXPECT_EQ(s.slots, 2);
  EXPECT_EQ(s.max_ahead_units, 0);
  EXPECT_EQ(s.peak_live_elems, 1'000);
  EXPECT_EQ(s.gathers, 2 * 7);
}

TEST(PrefetchPolicy, NothingAheadOnTheRecordingStep) {
  const std::vector<int64_t> sizes(6, 100);
  const std::vector<char> persistent(6, 0);
  const PrefetchSummary one =
      simulate_prefetch(forward_backward(6), sizes, persistent, 100, {1'000, 1'000'000}, 1);
  EXPECT_EQ(one.max_ahead_units, 0);
  EXPECT_EQ(one.peak_live_elems, 100);
}

TEST(PrefetchPolicy, UnitsAreTakenInOrderAndSizedByTheirElements) {
  // Sizes 100, 20, 20, 100, 20 ... with a bucket of 130: units in the recorded order while fewer
  // than 130 elements are ahead (the last one may overshoot, as DeepSpeed's), within the slots.
  const std::vector<int64_t> sizes{100, 20, 20, 100, 20, 20, 100};
  const std::vector<char> persistent(sizes.size(), 0);
  std::vector<UnitEvent> step;
  for (int u = 0; u < 7; ++u) step.insert(step.end(), {{u, true}, {u, false}});
  PrefetchPolicy p(sizes, persistent, 100, {130, 1'000'000});
  EXPECT_EQ(p.slots(), 4);  // 2 + ceil(130 / 100)
  p.begin_step();
  for (const auto& e : step) e.acquire ? (void)p.acquire(e.unit) : p.release(e.unit);
  p.end_step();
  p.invalidate();
  p.begin_step();
  PrefetchPolicy::Actions a = p.acquire(0);
  EXPECT_EQ(a.demand, 0);
  EXPECT_EQ(a.prefetch, (std::vector<int>{1, 2}));  // two prefetch slots: 1 and 2 (40 elements)
  p.release(0);
  a = p.acquire(1);
  EXPECT_EQ(a.demand, -1);
  EXPECT_EQ(a.freed, (std::vector<int>{0}));
  EXPECT_EQ(a.prefetch, (std::vector<int>{3}));  // 20 ahead < 130: unit 3 (100) overshoots
  p.release(1);
  // A live bound of 2m + 100 leaves one prefetch slot.
  PrefetchPolicy q(sizes, persistent, 100, {1'000, 300});
  q.begin_step();
  for (const auto& e : step) e.acquire ? (void)q.acquire(e.unit) : q.release(e.unit);
  q.end_step();
  q.invalidate();
  q.begin_step();
  EXPECT_EQ(q.slots(), 3);
  EXPECT_EQ(q.acquire(0).prefetch, (std::vector<int>{1}));
}

TEST(PrefetchPolicy, HeldPairsAndPersistentUnits) {
  // The model holds a weight in unit 1 and its bias in unit 2 at once; unit 0 is persistent
  // (its own buffer, outside the slots and the live count).
  const std::vector<int64_t> sizes{10, 100, 100, 100, 100};
  const std::vector<char> persistent{1, 0, 0, 0, 0};
  std::vector<UnitEvent> step{{0, true}, {0, false}};
  for (int u = 1; u < 5; u += 2)
    step.insert(step.end(), {{u, true}, {u + 1, true}, {u + 1, false}, {u, false}});
  step.insert(step.end(), {{0, true}, {0, false}});
  const PrefetchSummary none = simulate_prefetch(step, sizes, persistent, 100, {1, 200});
  EXPECT_EQ(none.slots, 2);
  EXPECT_EQ(none.peak_live_elems, 200);
  EXPECT_EQ(none.gathers, 2 * 4);
  const PrefetchSummary two = simulate_prefetch(step, sizes, persistent, 100, {200, 1'000});
  EXPECT_EQ(two.slots, 4);
  EXPECT_EQ(two.max_ahead_units, 2);
  EXPECT_EQ(two.gathers, 2 * 4);
  EXPECT_LE(two.peak_live_elems, 400);
}

TEST(PrefetchPolicy, AcquiresBetweenStepsAreOutsideTheOrder) {
  // An evaluation pass between steps (forward only) neither joins the trace nor stops the
  // next step's prefetching; and a step that left the order prefetches again at the next.
  const std::vector<int64_t> sizes(6, 100);
  const std::vector<char> persistent(6, 0);
  PrefetchPolicy p(sizes, persistent, 100, {100, 1'000'000});
  for (const auto& e : forward_backward(6)) e.acquire ? (void)p.acquire(e.unit) : p.release(e.unit);
  EXPECT_TRUE(p.trace().empty());
  p.begin_step();
  for (const auto& e : forward_backward(6)) e.acquire ? (void)p.acquire(e.unit) : p.release(e.unit);
  p.end_step();
  EXPECT_EQ(p.trace().size(), 12u);
  p.invalidate();
  for (int u = 0; u < 6; ++u) {
    EXPECT_TRUE(p.acquire(u).prefetch.empty());
    p.release(u);
  }
  p.invalidate();
  p.begin_step();
  EXPECT_TRUE(p.prefetching());
  EXPECT_EQ(p.acquire(0).prefetch, (std::vector<int>{1}));
  p.release(0);
  (void)p.acquire(3);  // off the order
  p.release(3);
  EXPECT_FALSE(p.prefetching());
  p.end_step();
  p.invalidate();
  p.begin_step();
  EXPECT_TRUE(p.prefetching());
  EXPECT_EQ(p.acquire(0).prefetch, (std::vector<int>{1}));
  EXPECT_EQ(p.trace().size(), 12u);
}

TEST(PrefetchPolicy, AChangedOrderStopsPrefetching) {
  const std::vector<int64_t> sizes(6, 100);
  const std::vector<char> persistent(6, 0);
  PrefetchPolicy p(sizes, persistent, 100, {300, 1'000'000});
  p.begin_step();
  for (const auto& e : forward_backward(6)) e.acquire ? (void)p.acquire(e.unit) : p.release(e.unit);
  p.end_step();
  p.invalidate();
  p.begin_step();
  EXPECT_FALSE(p.acquire(0).prefetch.empty());
  p.release(0);
  EXPECT_TRUE(p.prefetching());
  const PrefetchPolicy::Actions a = p.acquire(4);  // not the recorded next unit
  EXPECT_FALSE(p.prefetching());
  EXPECT_TRUE(a.prefetch.empty());
  p.release(4);
  // What was gathered ahead goes at the next acquire; slots are never exceeded.
  const PrefetchPolicy::Actions b = p.acquire(5);
  EXPECT_EQ(b.demand, 5);
  EXPECT_GE(b.freed.size(), 1u);
  p.release(5);
  EXPECT_THROW(p.release(5), std::exception);
}

}  // namespace
}  // namespace zt
