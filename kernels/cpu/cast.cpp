#include <cstdint>

#include "kernels/common/cast.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace zt::cpu {
namespace {

template <typename To, typename From>
void cast_impl(To* dst, const From* src, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) dst[i] = convert<To>(src[i]);
}

template <typename T>
void accumulate_impl(T* dst, const float* src, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) dst[i] = accumulate_rounded(dst[i], src[i]);
}

}  // namespace

void Kernels::cast(bf16* dst, const float* src, int64_t n, Exec) {
  cast_impl(dst, src, n);
}
void Kernels::cast(fp16* dst, const float* src, int64_t n, Exec) {
  cast_impl(dst, src, n);
}
void Kernels::cast(float* dst, const bf16* src, int64_t n, Exec) {
  cast_impl(dst, src, n);
}
void Kernels::cast(float* dst, const fp16* src, int64_t n, Exec) {
  cast_impl(dst, src, n);
}
void Kernels::accumulate(bf16* dst, const float* src, int64_t n, Exec) {
  accumulate_impl(dst, src, n);
}
void Kernels::accumulate(fp16* dst, const float* src, int64_t n, Exec) {
  accumulate_impl(dst, src, n);
}

}  // namespace zt::cpu
