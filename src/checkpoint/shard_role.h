#pragma once
// This rank's place in the checkpoint: its grid coordinates and which shard file, if any, it
// writes and reads as its own.
#include "src/checkpoint/checkpoint.h"

namespace zt {

struct ShardRole {
  int tp_rank = 0, dp_rank = 0, pp_rank = 0, tp = 1, dp = 1, pp = 1;
  // With states replicated over data parallelism (stage 0) one copy is saved: dp rank 0's, and
  // every dp rank loads from it.
  bool writes = true;
  int file_dp = 0;  // the dp index whose file holds this rank's states
};
ShardRole shard_role(const CheckpointState& s);

// A barrier over the host world.
void world_barrier(const CheckpointState& s);

}  // namespace zt
