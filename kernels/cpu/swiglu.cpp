#include <algorithm>
#include <cstdint>

#include "kernels/common/swiglu.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace zt::cpu {
namespace {
constexpr int kChunk = 256;  // elements of a row per pass of swiglu_backward
}  // namespace

template <typename T>
void Kernels::swiglu_forward(T* y, const T* pre, int64_t N, int F, Exec) {
#pragma omp parallel for schedule(static) if (N * F >= detail::kParallelMin)
  for (int64_t n = 0; n < N; ++n) {
    const T* g = pre + n * 2 * F;
    const T* u = g + F;
    T* o = y + n * F;
    for (int i = 0; i < F; ++i) o[i] = from_float<T>(swiglu_apply(to_float(g[i]), to_float(u[i])));
  }
}

template <typename T>
void Kernels::swiglu_backward(T* dpre, const T* dy, const T* pre, int64_t N, int F, Exec) {
#pragma omp parallel for schedule(static) if (N * F >= detail::kParallelMin)
  for (int64_t n = 0; n < N; ++n) {
    const T* g = pre + n * 2 * F;
    const T* u = g + F;
    const T* d = dy + n * F;
    T* dg = dpre + n * 2 * F;
    T* du = dg + F;
    // The gradients in fp32 a chunk at a time, then each rounded in its own loop: with both
    // roundings in the loop of the math, the compiler leaves the half types' loop scalar.
    for (int i0 = 0; i0 < F; i0 += kChunk) {
      const int len = std::min(kChunk, F - i0);
      float a[kChunk], b[kChunk];
      for (int i = 0; i < len; ++i)
        swiglu_grad(to_float(g[i0 + i]), to_float(u[i0 + i]), to_float(d[i0 + i]), a[i], b[i]);
      for (int i = 0; i < len; ++i) dg[i0 + i] = from_float<T>(a[i]);
      for (int i = 0; i < len; ++i) du[i0 + i] = from_float<T>(b[i]);
    }
  }
}

#define ZT_SWIGLU(T)                                                                   \
  template void Kernels::swiglu_forward<T>(T*, const T*, int64_t, int, Kernels::Exec); \
  template void Kernels::swiglu_backward<T>(T*, const T*, const T*, int64_t, int, Kernels::Exec);
ZT_SWIGLU(float)
ZT_SWIGLU(bf16)
ZT_SWIGLU(fp16)
#undef ZT_SWIGLU

}  // namespace zt::cpu
