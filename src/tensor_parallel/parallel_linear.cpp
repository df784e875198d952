#include "src/tensor_parallel/parallel_linear.h"

#include <cstdint>

#include "src/tensor_parallel/mappings.h"

namespace zt::tp {

void column_parallel_forward(Backend& be, Ref y, CRef x, CRef w, CRef b, int N, int in,
                             int out_local) {
  be.linear_forward(y, x, w, b, N, in, out_local);
}

void column_parallel_backward(Backend& be, comm::Communicator* tp, Ref dx, float* dw, float* db,
                              CRef dy, CRef x, CRef w, int N, int in, int out_local,
                              bool reduce_dx) {
  be.linear_backward(dx, dw, db, dy, x, w, N, in, out_local, false);
  if (reduce_dx && dx) copy_to_tp_backward(be, tp, dx, int64_t{N} * in);
}

void row_parallel_forward(Backend& be, comm::Communicator* tp, Ref y, CRef x, CRef w, CRef b, int N,
                          int in_local, int out) {
  if (!active(tp)) {
    be.linear_forward(y, x, w, b, N, in_local, out);  // tp = 1: bias fused, today's bits
    return;
  }
  // The bias must be added once, after the partial products are summed: seeding every rank's
  // GEMM with it would add it tp times.
  be.linear_forward(y, x, w, CRef(nullptr, x.t), N, in_local, out);
  reduce_from_tp_forward(be, tp, y, int64_t{N} * out);
  if (b) add_bias(be, y, b, N, out);
}

void row_parallel_backward(Backend& be, Ref dx, float* dw, float* db, CRef dy, CRef x, CRef w,
                           int N, int in_local, int out) {
  be.linear_backward(dx, dw, db, dy, x, w, N, in_local, out, false);
}

void add_bias(Backend& be, Ref y, CRef b, int N, int out) {
  be.add_broadcast(y, b, N, out);
}

void column_parallel_forward_gathered(Backend& be, comm::Communicator* tp, Ref y, Ref y_local,
                                      Ref scratch, CRef x, CRef w, CRef b, int N, int in,
                                      int out_local) {
  column_parallel_forward(be, y_local, x, w, b, N, in, out_local);
  gather_last_dim_forward(be, tp, y, y_local, N, out_local, scratch);
}

void column_parallel_backward_gathered(Backend& be, comm::Communicator* tp, Ref dx, float* dw,
                                       float* db, Ref dy_local, CRef dy, CRef x, CRef w, int N,
                                       int in, int out_local) {
  gather_last_dim_backward(be, tp, dy_local, dy, N, out_local);
  column_parallel_backward(be, tp, dx, dw, db, dy_local, x, w, N, in, out_local);
}

}  // namespace zt::tp
