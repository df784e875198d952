// Stage 3's prefetch flags do what they say, on every rank count CTest runs (dp = world):
//   - --prefetch-bucket-size sets how many units are gathered ahead and the gathered buffers
//     (MemoryPool's Buffers), exactly as PrefetchPolicy run over the recorded order predicts and
//     as the planner says;
//   - --max-live-parameters caps the gathered elements alive;
//   - the losses are bitwise those of every other setting (prefetching never changes numerics)
//     and the data-parallel bytes are the same (it never adds a gather).
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "src/comm/topology.h"
#include "src/planner/memory_plan.h"
#include "src/planner/train_plan.h"
#include "src/train/trainer.h"
#include "src/zero/partition.h"
#include "src/zero/prefetch_policy.h"
#include "tests/dist/dist_env.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

constexpr int64_t kUnit = 2000;  // --reduce-bucket-size: several units per layer

TrainOptions stage3(bool bf16) {
  TrainOptions o = test::small_gpt(0.1, 3);
  o.num_layers = 3;
  o.micro_batch_size = 2;
  o.global_batch_size = 4 * dist::world().size();  // two micro-batches per step
  o.zero_stage = 3;
  o.bf16 = bf16;
  o.reduce_bucket_size = kUnit;
  o.overlap_comm = true;
  o.param_persistence_threshold = 200;  // the layernorms stay gathered
  return o;
}

struct Measured {
  std::vector<double> losses;
  GatherStats stats;
  uint64_t dp_bytes = 0;
  size_t buffers = 0, planned_buffers = 0;
  PrefetchSummary predicted;
  int64_t max_unit = 0;
};

Measured run(const TrainOptions& o) {
  const int dp = dist::world().size();
  comm::Topology topo(dist::world(), 1);
  Trainer t(o, dist::pool(), topo);
  Measured r;
  for (const StepMetrics& m : t.run(false)) {
    r.losses.push_back(m.lm_loss);
    r.dp_bytes += m.comm_bytes_dp;
  }
  // The last step's gathers are in the overlap measure, each timed to its observed completion.
  const comm::OverlapTiming gathers = t.optimizer().gather_timing();
  const GradSyncTiming sync = t.optimizer().grad_sync_timing();
  if (dp > 1) {
    EXPECT_GT(gathers.comm_ms, 0);
    EXPECT_GE(gathers.hidden_fraction, 0);
    EXPECT_LE(gathers.hidden_fraction, 1);
    EXPECT_GE(sync.comm_ms, gathers.comm_ms);
  }
  const GatherStats* g = t.optimizer().gather_stats();
  EXPECT_NE(g, nullptr);
  if (g != nullptr) r.stats = *g;
  r.buffers = dist::pool().counters().peak[static_cast<size_t>(MemCategory::Buffers)];
  PlanInput in = plan_input_from(o, dp);
  in.staged_half_reductions = true;
  in.cuda = false;
  r.planned_buffers = plan_memory(in).buffers;
  // The policy alone, over the order this run recorded.
  const Partition part(t.optimizer().layout(), dp, topo.dp_rank(), o.reduce_bucket_size);
  std::vector<int64_t> sizes;
  std::vector<char> persistent;
  for (const auto& u : part.units()) {
    sizes.push_back(u.padded_len);
    persistent.push_back(t.optimizer().layout().blocks()[static_cast<size_t>(u.block)].numel() <=
                                 o.param_persistence_threshold
                             ? 1
                             : 0);
  }
  r.max_unit = part.max_unit();
  r.predicted = simulate_prefetch(r.stats.first_step, sizes, persistent, part.max_unit(),
                                  {o.prefetch_bucket_size, o.max_live_parameters}, o.train_iters);
  return r;
}

TEST(Zero3Prefetch, FlagsSetUnitsAheadAndBuffersAsPlanned) {
  for (bool bf16 : {false, true}) {
    const TrainOptions base = stage3(bf16);
    const int64_t m = Partition(ParamLayout::gpt(plan_input_from(base, dist::world().size()).model),
                                dist::world().size(), 0, kUnit)
                          .max_unit();
    struct Setting {
      int64_t bucket, live;
      int ahead;  // units gathered ahead at most
    };
    const Setting settings[] = {
        {1, 1'000'000'000, 1},          // DeepSpeed's loop: one unit however small
        {2 * m, 1'000'000'000, 2},      // two whole units
        {2 * m + 1, 1'000'000'000, 3},  // a third overshoots
        {4 * m, 1'000'000'000, 4},      //
        {4 * m, 3 * m, 1},              // the live bound leaves room for one ahead
        {4 * m, 2 * m, 0},              // none: the model's own two units only
        {4 * m, 1, 0},                  // below one unit: each unit runs alone
    };
    Measured first;
    for (const Setting& s : settings) {
      TrainOptions o = base;
      o.prefetch_bucket_size = s.bucket;
      o.max_live_parameters = s.live;
      const Measured r = run(o);
      const std::string what = std::string(bf16 ? "bf16" : "fp32") + " bucket " +
                               std::to_string(s.bucket) + " live " + std::to_string(s.live) +
                               " (unit " + std::to_string(m) + ")";
      if (dist::world().rank() == 0)
        std::printf(
            "%s: slots %d, ahead %d [%d predicted], peak live %lld [%lld], gathers "
            "%lld [%lld], buffers %zu [%zu planned], dp bytes %llu\n",
            what.c_str(), r.stats.slots, r.stats.max_ahead_units, r.predicted.max_ahead_units,
            static_cast<long long>(r.stats.peak_live_elems),
            static_cast<long long>(r.predicted.peak_live_elems),
            static_cast<long long>(r.stats.gathers), static_cast<long long>(r.predicted.gathers),
            r.buffers, r.planned_buffers, static_cast<unsigned long long>(r.dp_bytes));
      EXPECT_EQ(r.max_unit, m) << what;
      EXPECT_EQ(r.stats.max_ahead_units, s.ahead) << what;
      // The store's own measurements are what the policy predicts from the recorded order.
      EXPECT_EQ(r.stats.slots, r.predicted.slots) << what;
      EXPECT_EQ(r.stats.max_ahead_units, r.predicted.max_ahead_units) << what;
      EXPECT_EQ(r.stats.peak_live_elems, r.predicted.peak_live_elems) << what;
      EXPECT_EQ(r.stats.gathers, r.predicted.gathers) << what;
      // --max-live-parameters caps what is alive (the model's own two units always run).
      EXPECT_LE(r.stats.peak_live_elems, std::max<int64_t>(s.live, 2 * m)) << what;
      EXPECT_LE(r.stats.peak_live_elems, int64_t{r.stats.slots} * m) << what;
      // The gathered buffers are what the planner says.
      EXPECT_EQ(r.buffers, r.planned_buffers) << what;
      if (first.losses.empty()) {
        first = r;
        continue;
      }
      // Bitwise: prefetching moves gathers, never values; and it adds none.
      EXPECT_EQ(r.losses, first.losses) << what;
      EXPECT_EQ(r.stats.gathers, first.stats.gathers) << what;
      EXPECT_EQ(r.dp_bytes, first.dp_bytes) << what;
      // The buffers differ from the first setting's by exactly the slots.
      const size_t e = bf16 ? 2 : 4;
      EXPECT_EQ(static_cast<int64_t>(r.buffers) - static_cast<int64_t>(first.buffers),
                (r.stats.slots - first.stats.slots) * m * static_cast<int64_t>(e))
          << what;
    }
  }
}

}  // namespace
}  // namespace zt
