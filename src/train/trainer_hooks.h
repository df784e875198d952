#pragma once
// TrainerHooks: the points where a caller steps into a run without the Trainer knowing why (the
// failure tests inject their faults here: src/faults/fault_injection.h). Each is optional; an empty
// one changes nothing.
#include <cstdint>
#include <functional>

#include "src/checkpoint/checkpoint.h"

namespace zt {

struct TrainerHooks {
  // Step `step` (counted from 1) is under way. Fires twice per step: as the middle micro-batch
  // (number accumulation / 2) is loaded, and after the last micro-batch's backward, before the
  // optimizer step.
  std::function<void(int step)> mid_step;
  // The gradient every token's backward starts from in step `step` (the loss scale over the
  // global batch's token count): returns the one backward uses.
  std::function<float(int step, float dloss)> loss_gradient;
  // Whether the training-stream sample at position `sample` is poisoned: a step in which this
  // rank reads one starts its backward from NaN (a bad batch, which a rewind leaves out).
  std::function<bool(int64_t sample)> poisoned;
  // Step `step`'s optimizer starts writing back a chunk of its states swapped to NVMe
  // (--offload-optimizer nvme), once per chunk.
  std::function<void(int step)> optimizer_write_back;
  // The hooks of the save of iteration `iteration`'s checkpoint (after a rank's shard is on
  // disk, at each point of publishing it).
  std::function<SaveHooks(int iteration)> save;
};

}  // namespace zt
