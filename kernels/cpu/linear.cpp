#include <cstdint>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

void linear_forward(float* y, const float* x, const float* w, const float* b, int N, int in,
                    int out) {
  ZT_CHECK(N > 0 && in > 0 && out > 0, "linear_forward: bad shape N={} in={} out={}", N, in, out);
  float beta = 0.0f;
  if (b != nullptr) {
    // Seed y with the bias and let the GEMM accumulate (beta = 1): the same one pass over y
    // that beta = 0 costs OpenBLAS anyway.
#pragma omp parallel for schedule(static) if (int64_t{N} * out >= detail::kParallelMin)
    for (int n = 0; n < N; ++n) {
      float* yr = y + int64_t{n} * out;
      for (int o = 0; o < out; ++o) yr[o] = b[o];
    }
    beta = 1.0f;
  }
  gemm(false, true, N, out, in, 1.0f, x, in, w, in, beta, y, out);
}

void linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                     const float* w, int N, int in, int out, bool accumulate_dx) {
  ZT_CHECK(N > 0 && in > 0 && out > 0, "linear_backward: bad shape N={} in={} out={}", N, in, out);
  if (dx != nullptr) gemm(false, false, N, in, out, 1.0f, dy, out, w, in, accumulate_dx, dx, in);
  gemm(true, false, out, in, N, 1.0f, dy, out, x, in, 1.0f, dw, in);
  if (db != nullptr) {
    // Column sums: each thread owns a fixed range of columns and adds the rows in order, so
    // the result does not depend on the thread count.
#pragma omp parallel if (int64_t{N} * out >= detail::kParallelMin)
    {
      float acc[128];
#pragma omp for schedule(static)
      for (int o0 = 0; o0 < out; o0 += 128) {
        const int len = out - o0 < 128 ? out - o0 : 128;
        for (int j = 0; j < len; ++j) acc[j] = 0.0f;
        for (int n = 0; n < N; ++n) {
          const float* r = dy + int64_t{n} * out + o0;
          for (int j = 0; j < len; ++j) acc[j] += r[j];
        }
        for (int j = 0; j < len; ++j) db[o0 + j] += acc[j];
      }
    }
  }
}

}  // namespace zt::cpu
