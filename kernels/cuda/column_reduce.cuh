#pragma once
// Deterministic column sums over a row-major [N, C] matrix without atomics: a block owns 32
// columns (threadIdx.x) and kRowLanes row lanes (threadIdx.y, rows y, y + kRowLanes, ...); the
// lanes' partials are then added in lane order by one thread per column. Same order on every
// run, independent of the device's scheduling. f(n, c) returns the K values to sum for element
// (n, c); add(c, sums) receives the K column totals.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cublas_check.h"

namespace zt::cuda::detail {

inline constexpr int kColTile = 32;
inline constexpr int kRowLanes = 16;

template <int K, typename F, typename Add>
__global__ void column_reduce_kernel(int N, int C, F f, Add add) {
  __shared__ float part[K][kRowLanes][kColTile + 1];
  const int c = blockIdx.x * kColTile + threadIdx.x;
  float acc[K] = {};
  if (c < C)
    for (int n = threadIdx.y; n < N; n += kRowLanes) {
      const auto v = f(n, c);
      for (int k = 0; k < K; ++k) acc[k] += v[k];
    }
  for (int k = 0; k < K; ++k) part[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float tot[K];
    for (int k = 0; k < K; ++k) {
      tot[k] = part[k][0][threadIdx.x];
      for (int l = 1; l < kRowLanes; ++l) tot[k] += part[k][l][threadIdx.x];
    }
    add(c, tot);
  }
}

// Plain value array for f's result (device lambdas cannot return C arrays).
template <int K>
struct Values {
  float v[K];
  __device__ float operator[](int k) const { return v[k]; }
};

template <int K, typename F, typename Add>
void column_reduce(int N, int C, cudaStream_t stream, F f, Add add) {
  if (N <= 0 || C <= 0) return;
  const dim3 block(kColTile, kRowLanes);
  const unsigned grid = static_cast<unsigned>((C + kColTile - 1) / kColTile);
  column_reduce_kernel<K><<<grid, block, 0, stream>>>(N, C, f, add);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda::detail
