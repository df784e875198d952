#pragma once
// Stage 3's parameter store (see param_store.h): only the rank's shard of the working parameters
// is resident. A unit is all-gathered when the model acquires a span in it and it is not there;
// from the second step on, upcoming units in the first step's acquire order are gathered ahead
// as --prefetch-bucket-size and --max-live-parameters allow. PrefetchPolicy decides (which units
// to gather, drop, gather ahead; prefetch_policy.h has the semantics and the memory formula);
// this class owns the buffers and the handles and does what it decides. Units of blocks at or
// below --param-persistence-threshold have buffers of their own and stay gathered all step.
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/core/memory_pool.h"
#include "src/zero/param_store.h"
#include "src/zero/partition.h"
#include "src/zero/prefetch_policy.h"

namespace zt {

class GatheredParams final : public ParamStore {
 public:
  GatheredParams(const ParamLayout& layout, const Partition& part, DType working,
                 const DeviceContext& ctx, comm::Communicator& dp, int64_t persistence_threshold,
                 const PrefetchLimits& limits);
  ~GatheredParams() override;
  CRef acquire(const Span& s) override;
  void release(const Span& s) override;
  void from_master(const float* master) override;
  void from_master_range(int64_t shard_offset, int64_t len, const float* master) override;
  void finish_from_master() override;
  void from_full(const float*, const float* master) override { from_master(master); }
  void begin_step() override;
  void end_step() override;
  const GatherStats* gather_stats() const override { return &stats_; }
  comm::OverlapTiming gather_timing() const override { return log_.read(); }

 private:
  struct Slot {
    Buffer buffer;
    int unit = -1;
    bool ahead = false;  // gathered ahead of its acquire, not acquired yet
    bool logged = true;  // its gather's times are in the overlap log
    comm::Handle pending;
  };
  void start_gather(int unit, bool ahead);
  Slot& slot_of(int unit);
  void poll();
  void wait_needed(Slot& s);

  const ParamLayout& layout_;
  const Partition& part_;
  DType working_;
  Backend& be_;
  comm::Communicator& dp_;
  Buffer shard_;              // the own shard, working precision
  std::vector<Slot> shared_;  // PrefetchPolicy::slots() buffers of the largest unit
  std::vector<Slot> kept_;    // one per persistent unit
  std::vector<int> where_;    // per unit: index into shared_ or kept_ (persistent), or -1
  std::vector<char> persistent_;
  PrefetchPolicy policy_;
  GatherStats stats_;
  comm::OverlapLog log_;
  bool recording_ = false, recorded_ = false;  // the first step's events into stats_
};

}  // namespace zt
