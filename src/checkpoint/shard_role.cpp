#include "src/checkpoint/shard_role.h"

#include "src/core/error.h"

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
  const ParamLayout& layout = s.optimizer.layout();
  r.ep = layout.ep_size();
  // The file of dp index D holds ep rank D % ep's experts: this rank's own.
  ZT_CHECK(r.ep == 1 || layout.ep_rank() == r.dp_rank % r.ep,
           "dp rank {} holds the experts of ep rank {}, not {}", r.dp_rank, layout.ep_rank(),
           r.dp_rank % r.ep);
  const bool replicated = s.optimizer.state_replicated_over_dp();
  r.file_dp = replicated ? r.dp_rank % r.ep : r.dp_rank;
  r.writes = writes_shard(replicated, r.dp_rank, r.ep);
  return r;
}

void world_barrier(const CheckpointState& s) {
  s.topology.host_world().barrier();
}

}  // namespace zt
