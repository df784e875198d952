#pragma once
// Deterministic column sums over a row-major [N, C] matrix without atomics, in two passes:
//   1. block (column tile, row chunk) sums its kChunkRows rows (the chunks run over grid y and z,
//      grid.cuh: above 65,535 chunks, 16.7 M rows, y alone would not hold them) for 32 columns:
//      threadIdx.x is the column, threadIdx.y one of kRowLanes row lanes (rows y, y + kRowLanes,
//      ...), and the lanes are added in lane order; the chunk's partial goes to scratch [chunks, K,
//      C];
//   2. one thread per column adds the chunk partials in chunk order and calls add(c, totals).
// The order depends only on (N, C), so results are identical from run to run and across
// devices. f(n, c) returns the K values to sum for element (n, c) as Values<K>.
// Scratch: ceil(N / kChunkRows) * K * C floats (Scratch::ColumnReduce, context.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.cuh"

namespace zt::cuda::detail {

inline constexpr int kColTile = 32;
inline constexpr int kRowLanes = 16;
inline constexpr int kChunkRows = 256;

// Plain value array for f's result (device lambdas cannot return C arrays).
template <int K>
struct Values {
  float v[K];
  __device__ float operator[](int k) const { return v[k]; }
};

template <int K, typename F>
__global__ void column_partials_kernel(float* partials, int N, int C, int chunks, F f) {
  __shared__ float part[K][kRowLanes][kColTile + 1];
  const int64_t chunk = folded_y();
  if (chunk >= chunks) return;  // padding of the last grid plane
  const int c = blockIdx.x * kColTile + threadIdx.x;
  const int n0 = static_cast<int>(chunk) * kChunkRows;
  const int n1 = N - n0 > kChunkRows ? n0 + kChunkRows : N;
  float acc[K] = {};
  if (c < C)
    for (int n = n0 + threadIdx.y; n < n1; n += kRowLanes) {
      const Values<K> v = f(n, c);
      for (int k = 0; k < K; ++k) acc[k] += v[k];
    }
  for (int k = 0; k < K; ++k) part[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y == 0 && c < C)
    for (int k = 0; k < K; ++k) {
      float t = part[k][0][threadIdx.x];
      for (int l = 1; l < kRowLanes; ++l) t += part[k][l][threadIdx.x];
      partials[(chunk * K + k) * C + c] = t;
    }
}

template <int K, typename F, typename Add>
void column_reduce(int N, int C, cudaStream_t stream, F f, Add add) {
  if (N <= 0 || C <= 0) return;
  const int chunks = (N + kChunkRows - 1) / kChunkRows;
  auto* partials = static_cast<float*>(
      scratch(Scratch::ColumnReduce, sizeof(float) * static_cast<size_t>(chunks) * K * C, stream));
  const dim3 block(kColTile, kRowLanes);
  const dim3 grid = fold_y(static_cast<unsigned>((C + kColTile - 1) / kColTile), chunks);
  column_partials_kernel<K><<<grid, block, 0, stream>>>(partials, N, C, chunks, f);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
  for_each(C, stream, [=] __device__(int64_t c) {
    float tot[K];
    for (int k = 0; k < K; ++k) tot[k] = partials[k * int64_t{C} + c];
    for (int r = 1; r < chunks; ++r)
      for (int k = 0; k < K; ++k) tot[k] += partials[(int64_t{r} * K + k) * C + c];
    add(static_cast<int>(c), tot);
  });
}

}  // namespace zt::cuda::detail
