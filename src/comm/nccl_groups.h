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

// NCCL communicators one rank creates for a world of `world` ranks with `pp` pipeline stages:
// none for a world of one (every group is that rank alone: the CUDA TrainDevice uses a
// SelfCommunicator on the CUDA backend), else the world and every group the Topology splits
// from it, size-one groups included.
inline int nccl_communicators(int world, int pp) {
  return world > 1 ? 1 + Topology::split_groups(pp) : 0;
}

}  // namespace zt::comm
