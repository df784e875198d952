#pragma once
// This rank's place in the checkpoint: its grid coordinates and which shard file, if any, it
// writes and reads as its own.
#include "src/checkpoint/checkpoint.h"

namespace zt {

struct ShardRole {
  int tp_rank = 0, dp_rank = 0, pp_rank = 0, tp = 1, dp = 1, pp = 1;
  int ep = 1;  // expert parallelism (1 for a model without experts)
  // With states replicated over data parallelism (stage 0) one copy of each is saved: the ranks
  // of edp rank 0 (dp index D < ep, each holding ep rank D's experts) write, and dp rank D loads
  // file D % ep.
  bool writes = true;
  int file_dp = 0;  // the dp index whose file holds this rank's states
};
ShardRole shard_role(const CheckpointState& s);

// Whether dp rank `dp_rank` writes a shard file: every rank where the states are partitioned,
// else the first `ep` (edp rank 0).
inline bool writes_shard(bool replicated, int dp_rank, int ep) {
  return !replicated || dp_rank < ep;
}

// A barrier over the host world.
void world_barrier(const CheckpointState& s);

}  // namespace zt
