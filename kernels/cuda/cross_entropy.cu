// Vocab-parallel softmax cross-entropy: one block per row, cub::BlockReduce for the row max and
// the sum of exponentials; exp_f32 and the gradient formula as kernels/common/cross_entropy.h
// (padding columns >= v_real get probability 0 and gradient 0).
//
// Targets live on the device, so they are not validated on the host as the CPU backend does; a
// row whose target is outside [0, v_real) gets a NaN loss and its logits are left unchanged.
#include <cmath>
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <type_traits>

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

// fp32 logits keep pass 2's exponentials in place; half logits are only read in pass 2 and the
// gradient is recomputed from them in pass 3 and rounded once.
template <typename T>
__global__ void cross_entropy_kernel(T* logits, float* losses, const int32_t* targets, int V,
                                     int v_real, float dloss) {
  constexpr bool kF32 = std::is_same_v<T, float>;
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ float s_val;
  const int64_t n = blockIdx.x;
  T* row = logits + n * V;
  const int target = targets[n];
  if (target < 0 || target >= v_real) {
    if (threadIdx.x == 0) losses[n] = NAN;
    return;
  }
  const float xt = to_float(row[target]);  // read before any thread overwrites the row
  float mx = to_float(row[0]);
  for (int j = threadIdx.x; j < v_real; j += kRowThreads) {
    const float x = to_float(row[j]);
    mx = x > mx ? x : mx;
  }
  mx = BlockReduce(tmp).Reduce(mx, MaxOp{});
  if (threadIdx.x == 0) s_val = mx;
  __syncthreads();
  mx = s_val;
  float acc = 0.0f;
  for (int j = threadIdx.x; j < v_real; j += kRowThreads) {
    const float e = exp_f32(to_float(row[j]) - mx);
    if constexpr (kF32) row[j] = e;
    acc += e;
  }
  const float sum = BlockReduce(tmp).Sum(acc);
  __syncthreads();  // everyone has passed the s_val read above before it is reused
  if (threadIdx.x == 0) s_val = sum;
  __syncthreads();
  const float total = s_val;
  const float scale = dloss / total;
  if constexpr (kF32) {
    for (int j = threadIdx.x; j < v_real; j += kRowThreads) row[j] *= scale;
    for (int j = v_real + threadIdx.x; j < V; j += kRowThreads) row[j] = 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) row[target] -= dloss;
  } else {
    for (int j = threadIdx.x; j < v_real; j += kRowThreads) {
      float g = exp_f32(to_float(row[j]) - mx) * scale;
      if (j == target) g -= dloss;
      row[j] = from_float<T>(g);
    }
    for (int j = v_real + threadIdx.x; j < V; j += kRowThreads) row[j] = from_float<T>(0.0f);
  }
  if (threadIdx.x == 0) losses[n] = std::log(total) - (xt - mx);
}

}  // namespace
}  // namespace detail

template <typename T>
void Kernels::softmax_cross_entropy(T* logits, float* losses, const int32_t* targets, int N, int V,
                                    int v_real, float dloss, cudaStream_t stream) {
  ZT_CU_CHECK(N > 0 && v_real > 0 && v_real <= V,
              detail::cat("softmax_cross_entropy: N=", N, " V=", V, " v_real=", v_real));
  detail::cross_entropy_kernel<<<N, detail::kRowThreads, 0, stream>>>(logits, losses, targets, V,
                                                                      v_real, dloss);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

template void Kernels::softmax_cross_entropy<float>(float*, float*, const int32_t*, int, int, int,
                                                    float, cudaStream_t);
template void Kernels::softmax_cross_entropy<bf16>(bf16*, float*, const int32_t*, int, int, int,
                                                   float, cudaStream_t);
template void Kernels::softmax_cross_entropy<fp16>(fp16*, float*, const int32_t*, int, int, int,
                                                   float, cudaStream_t);

}  // namespace zt::cuda
