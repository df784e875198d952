#pragma once
// ParamStore: where the working parameters live and how the model reaches them — one part of a
// ZeRO stage.
//   ResidentParams  stage 0: every parameter, in layout order.
//   CastParams      stage 0 in half precision, no working copy: each acquired span is the fp32
//                   master's, rounded into an arena sized by what the model holds at once.
//   PaddedParams    stages 1-2: every parameter, in the partition's padded space; after the step
//                   each rank's updated parts are all-gathered unit by unit (behind the next
//                   forward where the update runs there).
//   GatheredParams  stage 3: only the own shard; a unit is all-gathered when the model acquires
//                   a span in it, or ahead of that by the prefetch policy.
#include <cstdint>
#include <functional>
#include <vector>

#include "src/comm/timeline.h"
#include "src/core/error.h"
#include "src/core/tensor.h"
#include "src/model/param_source.h"
#include "src/zero/prefetch_policy.h"

namespace zt {

// What stage 3's store measured on its own buffers and handles (not taken from the policy).
struct GatherStats {
  int slots = 0;                // shared gather buffers
  int64_t slot_elems = 0;       // elements each
  int max_ahead_units = 0;      // units gathered and not yet acquired, at most at once
  int64_t peak_live_elems = 0;  // elements of the units in the shared buffers, at most at once
  int64_t gathers = 0;          // all-gathers of shared units issued
  std::vector<UnitEvent> first_step;  // the first step's acquires and releases, by unit
};

// What the cast store (stage 0 without a working copy) measured of its arena and casts.
struct CastStats {
  int64_t arena_elems = 0;  // the arena's size
  int64_t peak_elems = 0;   // elements held at once, at most
  int64_t casts = 0;        // acquires, each one cast of its span from the master
  int64_t cast_elems = 0;   // elements cast, over all acquires
};

class ParamStore {
 public:
  virtual ~ParamStore() = default;
  virtual CRef acquire(const Span& s) = 0;
  virtual void release(const Span& s) = 0;
  // The working parameters again from the updated fp32 master shard (collective over the
  // data-parallel group in stages 1-2): from_master_range for every run of the shard (in the
  // backend's memory; any order, any cut), then finish_from_master. from_master(m) is both over
  // the whole shard.
  virtual void from_master(const float* master) = 0;
  virtual void from_master_range(int64_t shard_offset, int64_t len, const float* master) = 0;
  virtual void finish_from_master() = 0;
  // In place of from_master_range where the master is in host memory and the device apart (an
  // offloaded optimizer on CUDA): shard elements [shard_offset, shard_offset + len) already
  // rounded to the working precision on the host, in host memory.
  virtual void from_host_range(int64_t /*shard_offset*/, int64_t /*len*/, const void* /*host*/) {
    ZT_CHECK(false, "this parameter store takes the master from the backend's memory only");
  }
  // The working parameters from a full fp32 host copy every rank holds, and the master shard
  // already set from it (no collective).
  virtual void from_full(const float* full, const float* master) = 0;
  // The update writes its from_master_range runs on a thread of its own, in shard order, behind
  // the next forward: written(end) returns once the master shard's elements below `end` are in.
  // Each acquire waits only for its own span's (stages 0-2; a collective finish_from_master
  // gathers unit by unit as acquires reach them, in unit order on every rank), and
  // finish_deferred() completes the rest once the update has ended (every rank at the same point).
  // Stores that read the master ahead of the acquires (stage 3's prefetch, the cast store) do
  // not take it.
  virtual void defer_finish(std::function<void(int64_t)> /*written*/) {
    ZT_CHECK(false, "this parameter store does not take an update behind the forward");
  }
  virtual void finish_deferred() {}
  // Around each step's micro-batches (stage 3 learns the acquire order from the first step and
  // prefetches by it).
  virtual void begin_step() {}
  virtual void end_step() {}
  // The working parameters in ParamLayout order, where this store keeps them so (stage 0);
  // empty otherwise.
  virtual Tensor layout_params() const { return {}; }
  // Stage 3 only.
  virtual const GatherStats* gather_stats() const { return nullptr; }
  // The cast store only.
  virtual const CastStats* cast_stats() const { return nullptr; }
  // Stage 3 with its shard on NVMe: the swap file's bytes; 0 otherwise.
  virtual uint64_t swap_file_bytes() const { return 0; }
  // The last step's parameter gathers against the compute that needed them (stage 3; read after
  // the step): each from its start to its completion as the communicator saw it.
  virtual comm::OverlapTiming gather_timing() const { return {}; }
};

}  // namespace zt
