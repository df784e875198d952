#pragma once
// Grid-stride element-wise launches: for_each(n, stream, f) calls the device lambda f(i) for
// every i in [0, n). The bodies come from kernels/common; this only supplies the loop.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_check.h"

namespace zt::cuda::detail {

inline constexpr int kThreads = 256;

template <typename F>
__global__ void for_each_kernel(int64_t n, F f) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

// Enough blocks to fill the device a few times over; beyond that the loop strides.
inline int grid_for(int64_t n) {
  const int64_t want = (n + kThreads - 1) / kThreads;
  const int64_t cap = int64_t{sm_count()} * 32;
  return static_cast<int>(want < cap ? want : cap);
}

template <typename F>
void for_each(int64_t n, cudaStream_t stream, F f) {
  if (n <= 0) return;
  for_each_kernel<<<grid_for(n), kThreads, 0, stream>>>(n, f);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda::detail
