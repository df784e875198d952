#pragma once
// The conjugate mappings of Megatron-LM tensor parallelism, as explicit forward/backward pairs on
// raw fp32 buffers. The model has no autograd, so each mapping is two functions and the layer
// calls the backward half itself at the mirrored point.
//
//   copy-to-TP      forward: identity            backward: all-reduce (sum) of the gradient
//   reduce-from-TP  forward: all-reduce (sum)    backward: identity
//   scatter (last dim)  forward: keep this rank's column block   backward: gather
//   gather  (last dim)  forward: all-gather the column blocks    backward: keep this rank's block
//
// `tp` is the tensor-parallel group; nullptr (or a group of one) means tp = 1 and every mapping
// is the identity with no collective issued (there is nothing to move, and tp = 1 runs without
// a communicator). Everything that does move goes through the Communicator, so CommStats counts
// it on the tp group. `be` is the backend whose memory the buffers are in (it does the copies).
#include <cstdint>

#include "kernels/backend.h"
#include "src/comm/communicator.h"

namespace zt::tp {

// True when `tp` has more than one rank, i.e. the mappings actually communicate.
inline bool active(const comm::Communicator* tp) {
  return tp != nullptr && tp->size() > 1;
}
inline int size_of(const comm::Communicator* tp) {
  return tp == nullptr ? 1 : tp->size();
}
inline int rank_of(const comm::Communicator* tp) {
  return tp == nullptr ? 0 : tp->rank();
}

// In-place all-reduce of n elements over the tp group (no-op when !active(tp)).
void all_reduce(Backend& be, comm::Communicator* tp, Ref x, int64_t n,
                comm::ReduceOp op = comm::ReduceOp::Sum);

// copy-to-TP: the replicated input of a column-parallel layer.
inline void copy_to_tp_forward(Backend&, comm::Communicator*, CRef, int64_t) {}
// dx [n]: each rank's partial input gradient in, the full gradient out.
inline void copy_to_tp_backward(Backend& be, comm::Communicator* tp, Ref dx, int64_t n) {
  all_reduce(be, tp, dx, n);
}

// reduce-from-TP: the partial outputs of a row-parallel layer.
inline void reduce_from_tp_forward(Backend& be, comm::Communicator* tp, Ref y, int64_t n) {
  all_reduce(be, tp, y, n);
}
inline void reduce_from_tp_backward(Backend&, comm::Communicator*, Ref, int64_t) {}

// scatter along the last dim: full [rows, cols] -> local [rows, cols/tp] (this rank's block).
void scatter_last_dim_forward(Backend& be, comm::Communicator* tp, Ref local, CRef full,
                              int64_t rows, int64_t cols);
// dfull [rows, cols] = the gather of every rank's dlocal [rows, cols/tp]; scratch: rows*cols.
void scatter_last_dim_backward(Backend& be, comm::Communicator* tp, Ref dfull, CRef dlocal,
                               int64_t rows, int64_t cols, Ref scratch);

// gather along the last dim: local [rows, cols_local] -> full [rows, cols_local*tp];
// scratch: rows*cols_local*tp elements (the all-gather lands rank-major and is transposed).
void gather_last_dim_forward(Backend& be, comm::Communicator* tp, Ref full, CRef local,
                             int64_t rows, int64_t cols_local, Ref scratch);
// dlocal [rows, cols_local] = this rank's column block of dfull.
void gather_last_dim_backward(Backend& be, comm::Communicator* tp, Ref dlocal, CRef dfull,
                              int64_t rows, int64_t cols_local);

}  // namespace zt::tp
