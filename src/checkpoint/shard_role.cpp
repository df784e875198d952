#include "src/checkpoint/shard_role.h"

namespace zt {

ShardRole shard_role(const CheckpointState& s) {
  const comm::Topology& topo = s.topology;
  ShardRole r;
  r.tp_rank = topo.tp_rank();
  // ZeRO's shards are over the data × context group (parameters are replicated over both).
  r.dp_rank = topo.dp().rank();
  r.pp_rank = topo.pp_rank();
  r.tp = topo.tp_size();
  r.dp = topo.dp().size();
  r.pp = topo.pp_size();
  const bool replicated = s.optimizer.state_replicated_over_dp();
  r.file_dp = replicated ? 0 : r.dp_rank;
  r.writes = !replicated || r.dp_rank == 0;
  return r;
}

void world_barrier(const CheckpointState& s) {
  s.topology.host_world().barrier();
}

}  // namespace zt
