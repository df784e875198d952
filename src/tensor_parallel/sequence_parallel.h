#pragma once
// Megatron-LM's sequence-parallel mappings (Korthikanti et al., "Reducing Activation
// Recomputation in Large Transformer Models"). Outside the tensor-parallel regions (layernorms,
// dropouts, residuals) each tp rank keeps only its slice of the tokens, so those activations
// shrink by tp; entering a column-parallel layer the slices are all-gathered, and leaving a
// row-parallel layer the partial outputs are reduce-scattered instead of all-reduced (the same
// bytes: an all-reduce is a reduce-scatter plus an all-gather).
//
// The split is over the flattened tokens [N = B·T, C]: rank r holds rows
// [r·N/tp, (r+1)·N/tp), contiguous, which is what the communicator's reduce_scatter leaves and
// all_gather takes (rank-major). Row-wise ops (layernorm, dropout, residual add) do not care how
// rows are grouped; the dropout counters follow the global row (first_row()).
//
//   gather        forward: all-gather the slices     backward: reduce-scatter the gradient
//   reduce-scatter forward: reduce-scatter partials  backward: all-gather the gradient
//   scatter       forward: keep this rank's slice    backward: all-gather the gradient
//
// Like mappings.h, `tp` null or of size one makes every mapping a copy (or nothing) with no
// collective issued.
#include <cstdint>

#include "kernels/backend.h"
#include "src/comm/communicator.h"

namespace zt::tp {

// This rank's rows of n: n / tp (n must divide; validate_sequence_parallel says so to the user).
int64_t sequence_rows(const comm::Communicator* tp, int64_t n);
// The first global row this rank holds.
int64_t sequence_first_row(const comm::Communicator* tp, int64_t n);

// full [n, c] <- every rank's local [n/tp, c]. `local` may alias full's own slice.
void sequence_gather_forward(Backend& be, comm::Communicator* tp, Ref full, CRef local, int64_t n,
                             int64_t c);
// dlocal [n/tp, c] <- the sum over ranks of their dfull [n, c] rows of this rank.
void sequence_gather_backward(Backend& be, comm::Communicator* tp, Ref dlocal, CRef dfull,
                              int64_t n, int64_t c);
// local [n/tp, c] <- the sum over ranks of their partial [n, c] rows of this rank.
inline void sequence_reduce_scatter_forward(Backend& be, comm::Communicator* tp, Ref local,
                                            CRef partial, int64_t n, int64_t c) {
  sequence_gather_backward(be, tp, local, partial, n, c);
}
// dfull [n, c] <- every rank's dlocal [n/tp, c].
inline void sequence_reduce_scatter_backward(Backend& be, comm::Communicator* tp, Ref dfull,
                                             CRef dlocal, int64_t n, int64_t c) {
  sequence_gather_forward(be, tp, dfull, dlocal, n, c);
}
// local [n/tp, c] <- this rank's rows of full [n, c] (identical on every rank).
void sequence_scatter_forward(Backend& be, comm::Communicator* tp, Ref local, CRef full, int64_t n,
                              int64_t c);
// dfull [n, c] <- every rank's dlocal.
inline void sequence_scatter_backward(Backend& be, comm::Communicator* tp, Ref dfull, CRef dlocal,
                                      int64_t n, int64_t c) {
  sequence_gather_forward(be, tp, dfull, dlocal, n, c);
}

}  // namespace zt::tp
