#pragma once
// Where an element of a parameter lives under a saved layout, computed, never materialised: the
// inverse of ParamSpec::full_index (which tensor-parallel rank holds a full-tensor element, and
// at which local element) and of ZeRO's partition (which data-parallel shard holds a layout
// element, and where in it). A reshaping load and the export walk a tensor in runs: stretches
// that are contiguous on both sides, so each becomes one ranged read.
#include <cstdint>

#include "src/model/param_layout.h"
#include "src/zero/partition.h"

namespace zt {

struct TpLocation {
  int tp_rank = 0;
  int64_t local = 0;  // element of that rank's shard of the tensor
  int64_t run = 0;    // elements from here on contiguous in both the full tensor and the shard
};
// The rank of a `tp`-way split of `p` (any rank's spec of that layout) that holds full-tensor
// element `f`. Replicated tensors are read from rank 0.
TpLocation locate_tp(const ParamSpec& p, int tp, int64_t f);

// Elements from local element `i` of `p` whose full indices are consecutive.
int64_t full_run(const ParamSpec& p, int64_t i);

struct ShardLocation {
  int dp_rank = 0;
  int64_t offset = 0;  // element of that rank's shard (flat, as saved)
  int64_t run = 0;     // elements contiguous in both the layout and the shard
};
// Where layout element `layout_offset` of a layout partitioned as `part` (any dp rank's
// Partition of it: the units are the same on every rank) is kept.
ShardLocation locate_shard(const Partition& part, int64_t layout_offset);

}  // namespace zt
