#pragma once
// Where an element of a parameter lives under a saved layout, computed, never materialised: the
// inverse of ParamSpec::full_index (which tensor-parallel rank holds a full-tensor element, and
// at which local element) and of ZeRO's partition (which data-parallel shard holds a layout
// element, and where in it). A reshaping load and the export walk a tensor in runs: stretches
// that are contiguous on both sides, so each becomes one ranged read.
#include <cstdint>
#include <optional>

#include "src/checkpoint/meta.h"
#include "src/checkpoint/shard.h"
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

struct EpLocation {
  int ep_rank = 0;
  int64_t element = 0;  // element of that rank's stack, as its full_index counts it
  int64_t run = 0;      // elements from here on in the same rank's stack
};
// The rank of an `ep`-way expert split whose stack of `p` (any ep rank's spec: the stacks have
// the same shape) holds full-tensor element `f`. A dense parameter is whole on every ep rank:
// rank 0, the element itself.
EpLocation locate_ep(const ParamSpec& p, int ep, int64_t f);

// Elements from local element `i` of `p` whose full indices are consecutive.
int64_t full_run(const ParamSpec& p, int64_t i);

struct ShardLocation {
  int dp_rank = 0;
  int64_t offset = 0;  // element of that rank's shard (flat, as saved)
  int64_t run = 0;     // elements contiguous in both the layout and the shard
};
// Where layout element `layout_offset` of a layout partitioned as `part` (any dp rank's
// Partition of it: the units are the same on every rank) is kept. A dense unit's part k is dp
// rank k's; an expert unit's part k is edp rank k's, and of the `ep` ranks with that edp rank
// the one holding `ep_rank`'s experts: dp rank k·ep + ep_rank.
ShardLocation locate_shard(const Partition& part, int64_t layout_offset, int ep = 1,
                           int ep_rank = 0);

// What the shard files of one pipeline stage of a saved layout hold. The last stage's copy of
// the tied word embedding (its "head" block, pp > 1) is not saved: it equals the first stage's
// "embedding.word" (same initialisation, gradients summed every step), which is the one stored
// and the one every copy loads from. The head is the stage layout's last block, so its partition
// units are the last of every shard: a file holds each state's prefix before them.
struct SavedStage {
  ParamLayout layout;             // tensor-parallel rank 0's (and ep rank 0's) layout of the stage
  std::optional<Partition> part;  // ZeRO stages 1-3: its partition (dp rank 0's, experts over
                                  // dp / ep; the units are the same on every rank)
  int64_t section = 0;            // elements of each state section of the stage's files
};
SavedStage saved_stage(const CheckpointLayout& s, int pp_rank);
// The header of the shard file of (tp_rank, dp_rank) of stage `st` of `s`.
ShardHeader shard_header(const CheckpointLayout& s, const SavedStage& st, int tp_rank, int dp_rank);

}  // namespace zt
