#include <cstdint>

#include "kernels/common/swiglu.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace zt::cpu {

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
    for (int i = 0; i < F; ++i) {
      float a = 0.0f, b = 0.0f;
      swiglu_grad(to_float(g[i]), to_float(u[i]), to_float(d[i]), a, b);
      dg[i] = from_float<T>(a);
      du[i] = from_float<T>(b);
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
