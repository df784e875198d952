#include "src/tensor_parallel/parallel_linear.h"

#include <cstdint>

#include "kernels/cpu/ops.h"
#include "src/tensor_parallel/mappings.h"

namespace zt::tp {

void column_parallel_forward(float* y, const float* x, const float* w, const float* b, int N,
                             int in, int out_local) {
  cpu::linear_forward(y, x, w, b, N, in, out_local);
}

void column_parallel_backward(comm::Communicator* tp, float* dx, float* dw, float* db,
                              const float* dy, const float* x, const float* w, int N, int in,
                              int out_local, bool reduce_dx) {
  cpu::linear_backward(dx, dw, db, dy, x, w, N, in, out_local, false);
  if (reduce_dx && dx != nullptr) copy_to_tp_backward(tp, dx, int64_t{N} * in);
}

void row_parallel_forward(comm::Communicator* tp, float* y, const float* x, const float* w,
                          const float* b, int N, int in_local, int out) {
  if (!active(tp)) {
    cpu::linear_forward(y, x, w, b, N, in_local, out);  // tp = 1: bias fused, today's bits
    return;
  }
  // The bias must be added once, after the partial products are summed: seeding every rank's
  // GEMM with it would add it tp times.
  cpu::linear_forward(y, x, w, nullptr, N, in_local, out);
  reduce_from_tp_forward(tp, y, int64_t{N} * out);
  if (b != nullptr) add_bias(y, b, N, out);
}

void row_parallel_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                           const float* w, int N, int in_local, int out) {
  cpu::linear_backward(dx, dw, db, dy, x, w, N, in_local, out, false);
}

void add_bias(float* y, const float* b, int N, int out) {
#pragma omp parallel for schedule(static) if (int64_t{N} * out >= (int64_t{1} << 15))
  for (int n = 0; n < N; ++n) {
    float* r = y + int64_t{n} * out;
    for (int o = 0; o < out; ++o) r[o] += b[o];
  }
}

void column_parallel_forward_gathered(comm::Communicator* tp, float* y, float* y_local,
                                      float* scratch, const float* x, const float* w,
                                      const float* b, int N, int in, int out_local) {
  column_parallel_forward(y_local, x, w, b, N, in, out_local);
  gather_last_dim_forward(tp, y, y_local, N, out_local, scratch);
}

void column_parallel_backward_gathered(comm::Communicator* tp, float* dx, float* dw, float* db,
                                       float* dy_local, const float* dy, const float* x,
                                       const float* w, int N, int in, int out_local) {
  gather_last_dim_backward(tp, dy_local, dy, N, out_local);
  column_parallel_backward(tp, dx, dw, db, dy_local, x, w, N, in, out_local);
}

}  // namespace zt::tp
