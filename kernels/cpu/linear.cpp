#include <cstdint>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

template <typename T, typename Y>
void Kernels::linear_forward(Y* y, const T* x, const T* w, const T* b, int N, int in, int out,
                             Exec) {
  ZT_CHECK(N > 0 && in > 0 && out > 0, "linear_forward: bad shape N={} in={} out={}", N, in, out);
  float beta = 0.0f;
  if (b != nullptr) {
    // Seed y with the bias and let the GEMM accumulate (beta = 1): the same one pass over y
    // that beta = 0 costs the GEMM anyway, and the bias joins the fp32 sum before the one
    // rounding (a bias is representable in T, so seeding it is exact).
#pragma omp parallel for schedule(static) if (int64_t{N} * out >= detail::kParallelMin)
    for (int n = 0; n < N; ++n) {
      Y* yr = y + int64_t{n} * out;
      for (int o = 0; o < out; ++o) yr[o] = from_float<Y>(to_float(b[o]));
    }
    beta = 1.0f;
  }
  gemm_t(false, true, N, out, in, 1.0f, x, in, w, in, beta, y, out);
}

template <typename T>
void Kernels::linear_backward(T* dx, float* dw, float* db, const T* dy, const T* x, const T* w,
                              int N, int in, int out, bool accumulate_dx, Exec) {
  ZT_CHECK(N > 0 && in > 0 && out > 0, "linear_backward: bad shape N={} in={} out={}", N, in, out);
  if (dx != nullptr)
    gemm_t(false, false, N, in, out, 1.0f, dy, out, w, in, accumulate_dx ? 1.0f : 0.0f, dx, in);
  gemm_t(true, false, out, in, N, 1.0f, dy, out, x, in, 1.0f, dw, in);
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
          const T* r = dy + int64_t{n} * out + o0;
          for (int j = 0; j < len; ++j) acc[j] += to_float(r[j]);
        }
        for (int j = 0; j < len; ++j) db[o0 + j] += acc[j];
      }
    }
  }
}

// The fused ops are the two-op compositions on the CPU (the GEMM dominates; the GeLU pass is
// one read and write of the [N, out] result), so their bits are those of the unfused path.
template <typename T>
void Kernels::linear_gelu_forward(T* y, T* pre, const T* x, const T* w, const T* b, int N, int in,
                                  int out, Exec exec) {
  linear_forward(pre, x, w, b, N, in, out, exec);
  gelu_forward(y, pre, int64_t{N} * out, exec);
}

template <typename T>
void Kernels::linear_backward_gelu(T* dx, const T* dy, const T* w, const T* pre, int N, int in,
                                   int out, Exec exec) {
  ZT_CHECK(N > 0 && in > 0 && out > 0, "linear_backward_gelu: bad shape N={} in={} out={}", N, in,
           out);
  gemm_t(false, false, N, in, out, 1.0f, dy, out, w, in, 0.0f, dx, in);
  gelu_backward(dx, pre, dx, int64_t{N} * in, exec);
}

#define ZT_LINEAR(T)                                                                               \
  template void Kernels::linear_forward<T, T>(T*, const T*, const T*, const T*, int, int, int,     \
                                              Kernels::Exec);                                      \
  template void Kernels::linear_backward<T>(T*, float*, float*, const T*, const T*, const T*, int, \
                                            int, int, bool, Kernels::Exec);                        \
  template void Kernels::linear_gelu_forward<T>(T*, T*, const T*, const T*, const T*, int, int,    \
                                                int, Kernels::Exec);                               \
  template void Kernels::linear_backward_gelu<T>(T*, const T*, const T*, const T*, int, int, int,  \
                                                 Kernels::Exec);
ZT_LINEAR(float)
ZT_LINEAR(bf16)
ZT_LINEAR(fp16)
#undef ZT_LINEAR
template void Kernels::linear_forward<bf16, float>(float*, const bf16*, const bf16*, const bf16*,
                                                   int, int, int, Kernels::Exec);
template void Kernels::linear_forward<fp16, float>(float*, const fp16*, const fp16*, const fp16*,
                                                   int, int, int, Kernels::Exec);

}  // namespace zt::cpu
