// dtype casts and half-gradient accumulation, with the bit-level round-to-nearest-even of
// src/core/half.h (no cuda_bf16 intrinsics: the same code is valid on sm_70 and matches the CPU
// backend bit for bit).
#include <cstdint>

#include "kernels/common/cast.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

template <typename To, typename From>
void cast_impl(To* dst, const From* src, int64_t n, cudaStream_t stream) {
  for_each(n, stream, [=] __device__(int64_t i) { dst[i] = convert<To>(src[i]); });
}

template <typename T>
void accumulate_impl(T* dst, const float* src, int64_t n, cudaStream_t stream) {
  for_each(n, stream, [=] __device__(int64_t i) { dst[i] = accumulate_rounded(dst[i], src[i]); });
}

}  // namespace
}  // namespace detail

void Kernels::cast(bf16* dst, const float* src, int64_t n, cudaStream_t stream) {
  detail::cast_impl(dst, src, n, stream);
}
void Kernels::cast(fp16* dst, const float* src, int64_t n, cudaStream_t stream) {
  detail::cast_impl(dst, src, n, stream);
}
void Kernels::cast(float* dst, const bf16* src, int64_t n, cudaStream_t stream) {
  detail::cast_impl(dst, src, n, stream);
}
void Kernels::cast(float* dst, const fp16* src, int64_t n, cudaStream_t stream) {
  detail::cast_impl(dst, src, n, stream);
}
void Kernels::accumulate(bf16* dst, const float* src, int64_t n, cudaStream_t stream) {
  detail::accumulate_impl(dst, src, n, stream);
}
void Kernels::accumulate(fp16* dst, const float* src, int64_t n, cudaStream_t stream) {
  detail::accumulate_impl(dst, src, n, stream);
}

}  // namespace zt::cuda
