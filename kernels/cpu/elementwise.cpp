#include <cstdint>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace zt::cpu {

void add_inplace(float* y, const float* x, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void scale_inplace(float* x, float s, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace zt::cpu
