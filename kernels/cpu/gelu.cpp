#include <cstdint>

#include "kernels/common/gelu.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace zt::cpu {

template <typename T>
void Kernels::gelu_forward(T* out, const T* x, int64_t n, Exec) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = from_float<T>(gelu_tanh(to_float(x[i])));
}

template <typename T>
void Kernels::gelu_backward(T* dx, const T* x, const T* dout, int64_t n, Exec) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i)
    dx[i] = from_float<T>(to_float(dout[i]) * gelu_tanh_grad(to_float(x[i])));
}

#define ZT_GELU(T)                                                              \
  template void Kernels::gelu_forward<T>(T*, const T*, int64_t, Kernels::Exec); \
  template void Kernels::gelu_backward<T>(T*, const T*, const T*, int64_t, Kernels::Exec);
ZT_GELU(float)
ZT_GELU(bf16)
ZT_GELU(fp16)
#undef ZT_GELU

}  // namespace zt::cpu
