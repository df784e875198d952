#pragma once
// Stage 3's parameter store (see param_store.h): only the rank's shard of the working parameters
// is resident. A span's unit is all-gathered into a slot when the model acquires it and is not
// there, and a released unit's copy lives until another unit is acquired — a pass reaches each
// unit in one run, so every unit is gathered once per pass (memory_plan.cpp counts exactly
// this). Units of blocks at or below --param-persistence-threshold keep reserved slots for the
// whole step. From the second step on, the acquire order of the first drives a prefetch of the
// next unit, which only moves a gather earlier.
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/core/memory_pool.h"
#include "src/zero/param_store.h"
#include "src/zero/partition.h"

namespace zt {

class GatheredParams final : public ParamStore {
 public:
  // The model holds at most two spans at once (a weight and its bias, a layernorm's two
  // vectors), plus the one prefetched.
  static constexpr int kSlots = 3;
  GatheredParams(const ParamLayout& layout, const Partition& part, DType working,
                 const DeviceContext& ctx, comm::Communicator& dp, int64_t persistence_threshold);
  ~GatheredParams() override;
  CRef acquire(const Span& s) override;
  void release(const Span& s) override;
  void from_master(const float* master) override;
  void from_full(const float*, const float* master) override { from_master(master); }
  void begin_step() override { trace_pos_ = 0; }
  void end_step() override;

 private:
  struct Slot {
    Buffer buffer;
    int unit = -1;
    int held = 0;             // spans of the unit the model holds
    bool prefetched = false;  // gathered ahead of its acquire
    int reserved = -1;        // persistent slots: the one unit they hold all step
    comm::Handle pending;
  };
  Slot* find(int unit);
  Slot& start_gather(int unit);
  void prefetch_after(int unit);

  const ParamLayout& layout_;
  const Partition& part_;
  DType working_;
  Backend& be_;
  comm::Communicator& dp_;
  Buffer shard_;  // the own shard, working precision
  std::vector<Slot> slots_;
  std::vector<int> trace_;  // the units acquired in one step, in order
  size_t trace_pos_ = 0;
  bool trace_valid_ = false, recording_ = true;
};

}  // namespace zt
