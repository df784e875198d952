#pragma once
// Megatron's two halves of a tensor-parallel MLP / attention block, on typed buffers in the working
// precision (parameter gradients fp32).
//
// Column-parallel: W [out, in] split by output rows, each rank holds W_r [out/tp, in] and b_r.
//   forward  y_r = x W_rᵀ + b_r      (x replicated: copy-to-TP, identity)
//   backward dx = Σ_r dy_r W_r       (copy-to-TP backward: the all-reduce), dW_r, db_r local
// Row-parallel: W [out, in] split by input columns, each rank holds W_r [out, in/tp]; b whole.
//   forward  y = Σ_r x_r W_rᵀ + b   (reduce-from-TP: all-reduce, then the bias once)
//   backward dx_r = dy W_r, dW_r += dyᵀ x_r, db += colsum(dy) — dy is replicated, so db comes
//            out identical on every rank with no communication.
//
// At tp = 1 (`tp` null or a group of one) both are exactly the backend's linear_forward/backward
// with the bias fused into the GEMM as before, so tp = 1 keeps its bits. `be` computes.
#include "kernels/backend.h"
#include "src/comm/communicator.h"

namespace zt::tp {

// y [N, out_local] = x [N, in] · wᵀ + b (b may be null). No communication in forward. y may be
// fp32 while x and w are half (the head's logits).
void column_parallel_forward(Backend& be, Ref y, CRef x, CRef w, CRef b, int N, int in,
                             int out_local);
// dx [N, in] (overwritten) = this rank's partial input gradient dy·W_r, then — the copy-to-TP
// backward — all-reduced into the full one when `reduce_dx`; dw and db are added into.
// dx may be null (no input gradient, nothing reduced).
void column_parallel_backward(Backend& be, comm::Communicator* tp, Ref dx, float* dw, float* db,
                              CRef dy, CRef x, CRef w, int N, int in, int out_local,
                              bool reduce_dx = true);
// The gather_output form (Megatron's ColumnParallelLinear(gather_output=True)): the full
// y [N, out_local·tp] on every rank. y_local [N, out_local] and scratch [N, out_local·tp] are
// caller-owned workspace.
void column_parallel_forward_gathered(Backend& be, comm::Communicator* tp, Ref y, Ref y_local,
                                      Ref scratch, CRef x, CRef w, CRef b, int N, int in,
                                      int out_local);
// Its backward from the full dy [N, out_local·tp]: this rank's column block, then
// column_parallel_backward. dy_local [N, out_local] is workspace.
void column_parallel_backward_gathered(Backend& be, comm::Communicator* tp, Ref dx, float* dw,
                                       float* db, Ref dy_local, CRef dy, CRef x, CRef w, int N,
                                       int in, int out_local);
// y [N, out] = all-reduce(x [N, in_local] · wᵀ) + b. b may be null.
void row_parallel_forward(Backend& be, comm::Communicator* tp, Ref y, CRef x, CRef w, CRef b, int N,
                          int in_local, int out);
// dx [N, in_local] = dy · w (overwritten), dw += dyᵀ x, db += colsum(dy). No communication.
void row_parallel_backward(Backend& be, Ref dx, float* dw, float* db, CRef dy, CRef x, CRef w,
                           int N, int in_local, int out);
// y[n, :] += b for every row (the bias of a row-parallel layer, after the reduction).
void add_bias(Backend& be, Ref y, CRef b, int N, int out);

}  // namespace zt::tp
