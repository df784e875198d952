#pragma once
// Shard: what of the model states a rank owns and updates — the whole layout (stage 0) or its
// ZeRO partition shard (stages 1-3) — as runs of real elements in shard order. The optimizer,
// the gradient reducers and checkpoints walk it without knowing the stage.
#include <cstdint>
#include <vector>

#include "src/model/param_layout.h"
#include "src/zero/partition.h"

namespace zt {

struct Shard {
  int64_t numel = 0;
  std::vector<ShardSegment> segments;  // unit = -1 for the whole layout

  static Shard whole(const ParamLayout& layout);
  static Shard of(const Partition& part);
};

}  // namespace zt
