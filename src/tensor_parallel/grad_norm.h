#pragma once
// The global gradient norm of a tensor-parallel model, without double counting: every TP rank
// holds a different shard of each split parameter but a full copy of each replicated one (same
// values, same gradients). So ‖g‖² = Σ_ranks ‖g_split,r‖² + ‖g_replicated‖²: the split part is
// all-reduced over tp, the replicated part is added once (each rank adds its own, identical copy
// after the reduction). The result is the same on every TP rank; data parallelism adds a sum
// over dp on top (of the dp-reduced gradients, i.e. nothing when gradients are all-reduced).
#include "src/comm/communicator.h"

namespace zt::tp {

// `tp` reduces host memory (an MPI group).
double grad_sum_squares(comm::Communicator* tp, double split_local, double replicated_local);

}  // namespace zt::tp
