#pragma once
// What the CUDA backend's communication holds, declared without CUDA or NCCL headers so that the
// planner counts what NcclCommunicator and TrainDevice create.
#include <cstddef>

#include "src/comm/topology.h"

namespace zt::comm {

// The device word a barrier all-reduces (NcclCommunicator::barrier): taken from the context's
// device pool (category Buffers) at a communicator's first barrier, not before — the training
// step calls none (its barriers are on the host world), so a training run holds none.
inline constexpr size_t kNcclBarrierWordBytes = sizeof(float);

// Whether a group gets an NCCL communicator: not when it is one rank (a tp group at tp 1, a dp
// group at dp 1, ...), whose collectives are copies or nothing; an NCCL communicator of one would
// still take NCCL's buffers. NcclCommunicator::split gives such a group a SelfCommunicator.
inline bool group_needs_nccl(int members) {
  return members > 1;
}

// The NCCL communicators the rank at pipeline stage `stage` of a tp × dp × pp world creates (dp:
// the data × context group, `cp` of its ranks the context group): the world and each group the
// Topology splits (tp, cp, dp, pp, mp and, with pp > 1, the embedding group: the first and last
// stage, or the middle stages among themselves; with `ep` > 1 expert parallelism's ep and edp
// groups) that has more than one rank; none for a world of one (the CUDA TrainDevice then uses a
// SelfCommunicator world).
struct NcclGroups {
  bool world = false, tp = false, cp = false, dp = false, pp = false, mp = false, embedding = false;
  bool ep = false, edp = false;
  int count() const {
    return int{world} + int{tp} + int{cp} + int{dp} + int{pp} + int{mp} + int{embedding} + int{ep} +
           int{edp};
  }
};
inline NcclGroups nccl_groups(int tp, int dp, int pp, int stage, int cp = 1, int ep = 1) {
  NcclGroups g;
  g.world = group_needs_nccl(tp * dp * pp);
  if (!g.world) return g;
  g.tp = group_needs_nccl(tp);
  g.cp = group_needs_nccl(cp);
  g.dp = group_needs_nccl(dp);
  g.pp = group_needs_nccl(pp);
  g.mp = group_needs_nccl(tp * pp);
  const bool end = stage == 0 || stage == pp - 1;
  g.embedding = pp > 1 && group_needs_nccl(end ? 2 : pp - 2);
  g.ep = ep > 1 && group_needs_nccl(ep);
  g.edp = ep > 1 && group_needs_nccl(dp / ep);
  return g;
}
inline int nccl_communicators(int tp, int dp, int pp, int stage, int cp = 1, int ep = 1) {
  return nccl_groups(tp, dp, pp, stage, cp, ep).count();
}

// NCCL's own device memory, planned per communicator. NCCL allocates it itself (inside
// ncclCommInitRank and, lazily, at a communicator's first operations with a peer), outside the
// MemoryPool and --device-memory, and its amount depends on the topology NCCL detects, so the plan
// is a documented bound, not a count: each channel of a collective keeps its own FIFO of
// NCCL_BUFFSIZE bytes per connection (default 4 MiB: NCCL's environment-variable documentation,
// NCCL_BUFFSIZE; NVIDIA/nccl#285, DEFAULT_BUFFER_SIZE_BYTES), a ring has two connections per
// channel whatever the group size and the memory grows linearly with the channels
// (NVIDIA/nccl#864 / #986, NCCL's maintainer), and point-to-point operations share one buffer
// (NVIDIA/nccl#1450). The channel count is NCCL's choice per topology, capped by MAXCHANNELS in
// NVIDIA/nccl:src/include/device.h (32 in older releases, 64 in newer); the plan assumes 32, an
// assumption for NVLink-class machines, not a documented default. TrainDevice measures the drop of
// free device memory across the communicators' creation beside this figure (cmd_train's log line).
inline constexpr size_t kNcclBuffSizeBytes = size_t{4} << 20;
inline constexpr size_t kNcclPlannedChannels = 32;
inline constexpr size_t kNcclPlannedBytesPerCommunicator =
    kNcclPlannedChannels * 2 * kNcclBuffSizeBytes;
inline size_t nccl_planned_bytes(int communicators) {
  return static_cast<size_t>(communicators) * kNcclPlannedBytesPerCommunicator;
}

}  // namespace zt::comm
