#pragma once
// Stage 3's parameter store (see param_store.h): only the rank's shard of the working parameters
// is resident. A unit is all-gathered when the model acquires a span in it and it is not there;
// from the second step on, upcoming units in the first step's acquire order are gathered ahead
// as --prefetch-bucket-size and --max-live-parameters allow. PrefetchPolicy decides (which units
// to gather, drop, gather ahead; prefetch_policy.h has the semantics and the memory formula);
// this class owns the buffers and the handles and does what it decides. Units of blocks at or
// below --param-persistence-threshold have buffers of their own and stay gathered all step.
// The own shard is on the tier --offload-param chooses (ParamShard, param_shard.h): off the
// device, a unit's part is fetched into its slot first. A unit needed now is gathered at once;
// one gathered ahead is fetched at once and gathered later, the oldest such at each acquire or
// release (its read overlapping the compute in between). Gathers start in the order they were
// asked for, at points every rank reaches alike, never when a read happens to complete: the
// data-parallel ranks must issue their collectives in one order.
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/core/memory_pool.h"
#include "src/zero/param_shard.h"
#include "src/zero/param_store.h"
#include "src/zero/partition.h"
#include "src/zero/prefetch_policy.h"
#include "src/zero/unit_groups.h"

namespace zt {

class GatheredParams final : public ParamStore {
 public:
  GatheredParams(const ParamLayout& layout, const Partition& part, DType working,
                 const DeviceContext& ctx, const UnitGroups& groups, int64_t persistence_threshold,
                 const PrefetchLimits& limits, const StateTierConfig& tier = {});
  ~GatheredParams() override;
  // The elements of a unit's part each gather slot's fetch holds (ParamShard's slots): the
  // shared slots' first, then one per persistent unit in unit order.
  static std::vector<int64_t> slot_parts(const ParamLayout& layout, const Partition& part,
                                         int64_t persistence_threshold,
                                         const PrefetchLimits& limits);
  CRef acquire(const Span& s) override;
  void release(const Span& s) override;
  void from_master(const float* master) override;
  void from_master_range(int64_t shard_offset, int64_t len, const float* master) override;
  void from_host_range(int64_t shard_offset, int64_t len, const void* host) override;
  void finish_from_master() override;
  void from_full(const float*, const float* master) override { from_master(master); }
  void begin_step() override;
  void end_step() override;
  const GatherStats* gather_stats() const override { return &stats_; }
  uint64_t swap_file_bytes() const override { return shard_->file_bytes(); }
  comm::OverlapTiming gather_timing() const override { return log_.read(); }

 private:
  struct Slot {
    Buffer buffer;
    int unit = -1;
    bool ahead = false;     // gathered ahead of its acquire, not acquired yet
    bool logged = true;     // its gather's times are in the overlap log
    bool fetching = false;  // its part is being fetched; its gather has not started
    int64_t asked_at = 0;   // calls_ when the fetch began
    int id = 0;             // ParamShard's slot
    comm::Handle pending;
  };
  void start_gather(int unit, bool ahead);
  // Starts the gathers of the fetches asked for before `s`'s, then `s`'s.
  void launch_through(const Slot& s);
  void launch_oldest();  // the gather of the fetch asked for first
  void launch_gather(Slot& s);
  void settle(Slot& s);
  Slot& slot_of(int unit);
  void poll();
  void wait_needed(Slot& s);

  const ParamLayout& layout_;
  const Partition& part_;
  DType working_;
  Backend& be_;
  comm::Communicator& dp_;             // the stamps of the overlap log
  UnitGroups groups_;                  // each unit's collectives
  std::unique_ptr<ParamShard> shard_;  // the own shard, working precision
  std::vector<Slot> shared_;           // PrefetchPolicy::slots() buffers of the largest unit
  std::vector<Slot> kept_;             // one per persistent unit
  std::vector<int> where_;             // per unit: index into shared_ or kept_ (persistent), or -1
  std::deque<Slot*> fetching_;         // slots whose fetch began and gather did not, in order asked
  int64_t calls_ = 0;                  // acquires and releases so far
  std::vector<char> persistent_;
  PrefetchPolicy policy_;
  GatherStats stats_;
  comm::OverlapLog log_;
  bool recording_ = false, recorded_ = false;  // the first step's events into stats_
};

}  // namespace zt
