#include <cstdint>

#include "kernels/common/gelu.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace zt::cpu {

void gelu_forward(float* out, const float* x, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = gelu_tanh(x[i]);
}

void gelu_backward(float* dx, const float* x, const float* dout, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) dx[i] = dout[i] * gelu_tanh_grad(x[i]);
}

}  // namespace zt::cpu
