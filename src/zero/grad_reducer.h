#pragma once
// GradReducer: how a rank's gradients cross the data-parallel group — one part of a ZeRO stage.
// The model opens and closes gradient spans (ParamSource); the reducer stages them, starts the
// reduction of whatever range is complete, and at the step holds this rank's summed gradient of
// every segment of its Shard:
//   AllReduceGrads       stage 0: the whole gradient kept; buckets all-reduced as they complete.
//   ReduceScatterAtStep  stage 1: the whole gradient kept; each unit reduce-scattered in place
//                        once the last micro-batch completes it.
//   ReduceScatterUnits   stages 2-3: only the own shard kept; each unit staged and
//                        reduce-scattered as soon as backward completes it, every micro-batch.
//                        With the optimizer offloaded from a device of its own, the shard is
//                        in host memory, or with the optimizer on NVMe on the NVMe tier, and
//                        each reduced part goes there as it completes (ZeRO-Offload's and
//                        ZeRO-Infinity's gradient offload).
#include <chrono>

#include "src/model/param_source.h"
#include "src/zero/dp_grad_sync.h"
#include "src/zero/partition.h"

namespace zt {

class GradReducer {
 public:
  virtual ~GradReducer() = default;
  virtual float* open(const Span& s) = 0;
  virtual void close(const Span& s) = 0;
  virtual void begin_microbatch(bool last) = 0;
  virtual void zero() = 0;
  // Completes every reduction of the step.
  virtual void finish() = 0;
  // The summed gradient of a segment of the rank's Shard, in the working precision: in the
  // backend's memory, or in host memory where grads_on_host().
  virtual const void* grad(const ShardSegment& s) const = 0;
  virtual bool grads_on_host() const { return false; }
  // False where the summed gradient is not in memory (the NVMe tier): grad() is then unusable
  // and read_grad copies shard elements [offset, offset + len) of it into host memory.
  virtual bool grads_resident() const { return true; }
  virtual void read_grad(int64_t offset, int64_t len, void* host) const {
    (void)offset;
    (void)len;
    (void)host;
  }
  // The gradient shard's swap file's bytes (the NVMe tier), 0 elsewhere.
  virtual uint64_t swap_file_bytes() const { return 0; }
  // True when every data-parallel rank holds the same summed gradient (then one rank's copy counts
  // in the global norm).
  virtual bool replicated() const = 0;
  virtual GradSyncTiming timing() const = 0;
  // Stages 0-1: the accumulated (not yet reduced) gradient of layout elements [offset, offset +
  // len), in the working precision, contiguous: len elements of one partition unit. Null where
  // the whole gradient is not kept.
  virtual Tensor local_grads(int64_t layout_offset, int64_t len) {
    (void)layout_offset;
    (void)len;
    return {};
  }
  // The whole kept gradient in ParamLayout order, where this reducer keeps it so (stage 0);
  // empty otherwise.
  virtual Tensor layout_grads() const { return {}; }
};

}  // namespace zt
