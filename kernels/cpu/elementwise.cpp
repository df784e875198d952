#include <cstdint>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace zt::cpu {

template <typename T>
void Kernels::add_inplace(T* y, const T* x, int64_t n, Exec) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = from_float<T>(to_float(y[i]) + to_float(x[i]));
}

template <typename T>
void Kernels::add_broadcast(T* y, const T* x, int64_t rows, int64_t n, Exec) {
#pragma omp parallel for schedule(static) if (rows * n >= detail::kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    T* row = y + r * n;
    for (int64_t i = 0; i < n; ++i) row[i] = from_float<T>(to_float(row[i]) + to_float(x[i]));
  }
}

void Kernels::scale_inplace(float* x, float s, int64_t n, Exec) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

#define ZT_ELEMENTWISE(T)                                                      \
  template void Kernels::add_inplace<T>(T*, const T*, int64_t, Kernels::Exec); \
  template void Kernels::add_broadcast<T>(T*, const T*, int64_t, int64_t, Kernels::Exec);
ZT_ELEMENTWISE(float)
ZT_ELEMENTWISE(bf16)
ZT_ELEMENTWISE(fp16)
#undef ZT_ELEMENTWISE

}  // namespace zt::cpu
