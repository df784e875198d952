#include <cstdint>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace zt::cpu {

template <typename T>
void add_inplace(T* y, const T* x, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = from_float<T>(to_float(y[i]) + to_float(x[i]));
}

template <typename T>
void add_broadcast(T* y, const T* x, int64_t rows, int64_t n) {
#pragma omp parallel for schedule(static) if (rows * n >= detail::kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    T* row = y + r * n;
    for (int64_t i = 0; i < n; ++i) row[i] = from_float<T>(to_float(row[i]) + to_float(x[i]));
  }
}

void scale_inplace(float* x, float s, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

#define ZT_ELEMENTWISE(T)                              \
  template void add_inplace<T>(T*, const T*, int64_t); \
  template void add_broadcast<T>(T*, const T*, int64_t, int64_t);
ZT_ELEMENTWISE(float)
ZT_ELEMENTWISE(bf16)
ZT_ELEMENTWISE(fp16)
#undef ZT_ELEMENTWISE

}  // namespace zt::cpu
