// Vocab-parallel softmax cross-entropy: one block per row, cub::BlockReduce for the row max and
// the sum of exponentials; exp_f32 and the gradient formula as kernels/common/cross_entropy.h
// (padding columns >= v_real get probability 0 and gradient 0).
//
// Targets live on the device, so they are not validated on the host as the CPU backend does; a
// row whose target is outside [0, v_real) gets a NaN loss and its logits are left unchanged.
#include <cmath>
#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "kernels/common/math.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

constexpr int kRowThreads = 512;
using BlockReduce = cub::BlockReduce<float, kRowThreads>;

struct MaxOp {
  __device__ float operator()(float a, float b) const { return b > a ? b : a; }
};

__global__ void cross_entropy_kernel(float* logits, float* losses, const int32_t* targets, int V,
                                     int v_real, float dloss) {
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ float s_val;
  const int64_t n = blockIdx.x;
  float* row = logits + n * V;
  const int target = targets[n];
  if (target < 0 || target >= v_real) {
    if (threadIdx.x == 0) losses[n] = NAN;
    return;
  }
  const float xt = row[target];  // read before any thread overwrites the row
  float mx = row[0];
  for (int j = threadIdx.x; j < v_real; j += kRowThreads) mx = row[j] > mx ? row[j] : mx;
  mx = BlockReduce(tmp).Reduce(mx, MaxOp{});
  if (threadIdx.x == 0) s_val = mx;
  __syncthreads();
  mx = s_val;
  float acc = 0.0f;
  for (int j = threadIdx.x; j < v_real; j += kRowThreads) {
    const float e = exp_f32(row[j] - mx);
    row[j] = e;
    acc += e;
  }
  const float sum = BlockReduce(tmp).Sum(acc);
  __syncthreads();  // everyone has passed the s_val read above before it is reused
  if (threadIdx.x == 0) s_val = sum;
  __syncthreads();
  const float total = s_val;
  const float scale = dloss / total;
  for (int j = threadIdx.x; j < v_real; j += kRowThreads) row[j] *= scale;
  for (int j = v_real + threadIdx.x; j < V; j += kRowThreads) row[j] = 0.0f;
  __syncthreads();
  if (threadIdx.x == 0) {
    row[target] -= dloss;
    losses[n] = std::log(total) - (xt - mx);
  }
}

}  // namespace
}  // namespace detail

void softmax_cross_entropy(float* logits, float* losses, const int32_t* targets, int N, int V,
                           int v_real, float dloss, cudaStream_t stream) {
  ZT_CU_CHECK(N > 0 && v_real > 0 && v_real <= V,
              detail::cat("softmax_cross_entropy: N=", N, " V=", V, " v_real=", v_real));
  detail::cross_entropy_kernel<<<N, detail::kRowThreads, 0, stream>>>(logits, losses, targets, V,
                                                                      v_real, dloss);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
