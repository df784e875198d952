#pragma once
// Stage 3's prefetch and release policy, with DeepSpeed's meaning of its two flags
// (PartitionedParameterCoordinator):
//   --prefetch-bucket-size  elements of upcoming units gathered ahead of their use, in the order
//                           recorded on the first step (forward, then backward). As DeepSpeed's
//                           loop, a unit is taken while fewer than that many are ahead, so the
//                           last one may overshoot by less than one unit.
//   --max-live-parameters   bound on the gathered elements alive: the units the model holds plus
//                           the ones gathered ahead. Prefetching stops where one more unit would
//                           pass it; what the model itself asks for is always gathered (a unit
//                           larger than the limit runs alone).
// Units of blocks at or below --param-persistence-threshold stay gathered all step in buffers
// of their own and are outside this policy.
//
// The shared gathered memory is `slots` buffers of the largest unit each (no fragmentation,
// allocated once): two for what the model holds at once (a weight and its bias, a layernorm's
// two vectors) and the prefetch slots the two limits allow,
//   P = max(0, min(ceil(B / m), floor((L - 2m) / m))),  slots = min(shared units, 2 + P)
// (B the prefetch bucket, L the live bound, m the largest unit). The planner counts
// slots · m elements; GatheredParams allocates exactly that.
//
// A released unit's copy lives until another unit is acquired, so each pass gathers every unit
// once; a prefetch only moves a gather earlier and never adds one.
//
// PrefetchPolicy is pure bookkeeping (no buffers, no communication): GatheredParams executes
// its decisions, and simulate_prefetch() runs it over a recorded step, so the simulator and the
// tests predict what the trainer does from the same code.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace zt {

struct PrefetchLimits {
  int64_t prefetch_bucket_elems = 0;  // --prefetch-bucket-size
  int64_t max_live_elems = 0;         // --max-live-parameters
};

// The number of max-unit slots of the shared gathered buffer (formula above).
int gathered_slots(int shared_units, int64_t max_unit, const PrefetchLimits& limits);

// One event of a step as the parameter store sees it: the model acquires or releases a span in
// `unit`.
struct UnitEvent {
  int unit = 0;
  bool acquire = true;
  bool operator==(const UnitEvent&) const = default;
};

class PrefetchPolicy {
 public:
  // `unit_elems`: each unit's gathered (padded) elements; `persistent`: units kept all step.
  PrefetchPolicy(std::vector<int64_t> unit_elems, std::vector<char> persistent, int64_t max_unit,
                 const PrefetchLimits& limits);

  // What the store does when the model acquires a span in `unit`, in this order: drop the
  // copies of `freed`, gather `demand` (-1: resident already), wait for `unit`, then start the
  // gathers of `prefetch`.
  struct Actions {
    std::vector<int> freed;
    int demand = -1;
    std::vector<int> prefetch;
  };
  Actions acquire(int unit);
  void release(int unit);
  // Step boundaries: the first step's acquire order becomes the trace that later steps follow.
  // Acquires outside a step (evaluation, generation) are neither recorded nor prefetched for;
  // a step that leaves the order stops prefetching until the next step.
  void begin_step();
  void end_step();
  // Every gathered copy is stale (new parameters): all non-persistent units are dropped.
  void invalidate();

  int slots() const { return slots_; }
  // Measured by the policy over its lifetime (persistent units excluded).
  int64_t peak_live_elems() const { return peak_live_; }
  int max_ahead_units() const { return max_ahead_; }
  int64_t gathers() const { return gathers_; }
  bool prefetching() const { return following_; }
  const std::vector<int>& trace() const { return trace_; }

 private:
  enum class State : uint8_t { Absent, Resident, Ahead };  // Ahead: prefetched, not acquired yet
  void gather(int unit, State s);
  void drop(int unit, std::vector<int>& freed);
  void prefetch_from(size_t pos, std::vector<int>& out);

  std::vector<int64_t> elems_;
  std::vector<char> persistent_;
  int64_t max_unit_;
  PrefetchLimits limits_;
  int slots_ = 0;
  int prefetch_slots_ = 0;
  std::vector<State> state_;
  std::vector<int> held_;
  int resident_ = 0, ahead_ = 0;
  int64_t live_ = 0, ahead_elems_ = 0;
  int64_t peak_live_ = 0;
  int max_ahead_ = 0;
  int64_t gathers_ = 0;
  std::vector<int> trace_;
  size_t pos_ = 0;
  bool in_step_ = false, recorded_ = false, following_ = false;
};

struct PrefetchSummary {
  int slots = 0;
  int64_t peak_live_elems = 0;  // non-persistent gathered elements alive at once
  int max_ahead_units = 0;      // units gathered ahead of their use at once
  int64_t gathers = 0;          // of the non-persistent units, over every step run
};

// The policy run over `steps` steps whose events are `step` each (the first records the trace,
// the rest prefetch by it): what GatheredParams does under the same inputs.
PrefetchSummary simulate_prefetch(const std::vector<UnitEvent>& step,
                                  const std::vector<int64_t>& unit_elems,
                                  const std::vector<char>& persistent, int64_t max_unit,
                                  const PrefetchLimits& limits, int steps = 2);

}  // namespace zt
