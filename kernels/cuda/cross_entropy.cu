// Softmax cross-entropy, fused (softmax_cross_entropy) and in the three vocab-parallel passes
// (vocab_ce_*): one block per row, cub::BlockReduce for the row max and the sum of exponentials;
// exp_f32 and the gradient formula as kernels/common/cross_entropy.h (padding columns >= v_real
// get probability 0 and gradient 0).
//
// Targets are checked on the host when the batch is loaded (src/train/trainer.cpp). The kernels
// keep a cheap guard: a row whose target is outside [0, v_real) gets a NaN loss and a NaN
// gradient, so the step's gradient norm is not finite and the step is skipped.
#include <cmath>
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <type_traits>

#include "kernels/common/cross_entropy.h"
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

template <typename T>
__device__ void poison_row(T* row, float* loss, int cols) {
  for (int j = threadIdx.x; j < cols; j += kRowThreads) row[j] = from_float<T>(NAN);
  if (threadIdx.x == 0) *loss = NAN;
}

template <typename T>
__global__ void vocab_ce_max_kernel(const T* logits, float* mx, int V, int real) {
  __shared__ typename BlockReduce::TempStorage tmp;
  const T* row = logits + int64_t{blockIdx.x} * V;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < real; j += kRowThreads) {
    const float x = to_float(row[j]);
    m = x > m ? x : m;
  }
  m = BlockReduce(tmp).Reduce(m, MaxOp{});
  if (threadIdx.x == 0) mx[blockIdx.x] = m;
}

template <typename T>
__global__ void vocab_ce_sum_exp_kernel(T* logits, float* sum_z, const float* mx,
                                        const int32_t* targets, int N, int V, int v_begin,
                                        int real) {
  __shared__ typename BlockReduce::TempStorage tmp;
  const int64_t n = blockIdx.x;
  T* row = logits + n * V;
  const float m = mx[n];
  const int t = vocab_ce_local_target(targets[n], V, v_begin);
  if (threadIdx.x == 0) sum_z[N + n] = t >= 0 ? to_float(row[t]) - m : 0.0f;
  __syncthreads();  // the target logit is read before any thread overwrites the row
  float acc = 0.0f;
  for (int j = threadIdx.x; j < real; j += kRowThreads) {
    const float e = exp_f32(to_float(row[j]) - m);
    if constexpr (std::is_same_v<T, float>) row[j] = e;
    acc += e;
  }
  acc = BlockReduce(tmp).Sum(acc);
  if (threadIdx.x == 0) sum_z[n] = acc;
}

template <typename T>
__global__ void vocab_ce_grad_kernel(T* logits, float* losses, const float* mx, const float* sum_z,
                                     const int32_t* targets, int N, int V, int v_begin, int v_real,
                                     int real, float dloss) {
  const int64_t n = blockIdx.x;
  T* row = logits + n * V;
  if (targets[n] < 0 || targets[n] >= v_real) {
    poison_row(row, losses + n, real);
    return;
  }
  const float m = mx[n], scale = dloss / sum_z[n];
  const int t = vocab_ce_local_target(targets[n], V, v_begin);
  if constexpr (std::is_same_v<T, float>) {
    for (int j = threadIdx.x; j < real; j += kRowThreads) row[j] *= scale;
    for (int j = real + threadIdx.x; j < V; j += kRowThreads) row[j] = 0.0f;
    __syncthreads();
    if (threadIdx.x == 0 && t >= 0) row[t] -= dloss;
  } else {
    for (int j = threadIdx.x; j < real; j += kRowThreads) {
      float g = exp_f32(to_float(row[j]) - m) * scale;
      if (j == t) g -= dloss;
      row[j] = from_float<T>(g);
    }
    for (int j = real + threadIdx.x; j < V; j += kRowThreads) row[j] = from_float<T>(0.0f);
  }
  if (threadIdx.x == 0) losses[n] = vocab_ce_loss(sum_z[n], sum_z[N + n]);
}

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
    poison_row(row, losses + n, v_real);
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

template <typename T>
void Kernels::vocab_ce_max(const T* logits, float* mx, int N, int V, int v_begin, int v_real,
                           cudaStream_t stream) {
  ZT_CU_CHECK(N > 0 && V > 0, detail::cat("vocab_ce_max: N=", N, " V=", V));
  detail::vocab_ce_max_kernel<<<N, detail::kRowThreads, 0, stream>>>(
      logits, mx, V, vocab_ce_real(V, v_begin, v_real));
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void Kernels::vocab_ce_sum_exp(T* logits, float* sum_z, const float* mx, const int32_t* targets,
                               int N, int V, int v_begin, int v_real, cudaStream_t stream) {
  ZT_CU_CHECK(N > 0 && V > 0, detail::cat("vocab_ce_sum_exp: N=", N, " V=", V));
  detail::vocab_ce_sum_exp_kernel<<<N, detail::kRowThreads, 0, stream>>>(
      logits, sum_z, mx, targets, N, V, v_begin, vocab_ce_real(V, v_begin, v_real));
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void Kernels::vocab_ce_grad(T* logits, float* losses, const float* mx, const float* sum_z,
                            const int32_t* targets, int N, int V, int v_begin, int v_real,
                            float dloss, cudaStream_t stream) {
  ZT_CU_CHECK(N > 0 && V > 0, detail::cat("vocab_ce_grad: N=", N, " V=", V));
  detail::vocab_ce_grad_kernel<<<N, detail::kRowThreads, 0, stream>>>(
      logits, losses, mx, sum_z, targets, N, V, v_begin, v_real, vocab_ce_real(V, v_begin, v_real),
      dloss);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

#define ZT_VOCAB_CE(T)                                                                            \
  template void Kernels::vocab_ce_max<T>(const T*, float*, int, int, int, int, cudaStream_t);     \
  template void Kernels::vocab_ce_sum_exp<T>(T*, float*, const float*, const int32_t*, int, int,  \
                                             int, int, cudaStream_t);                             \
  template void Kernels::vocab_ce_grad<T>(T*, float*, const float*, const float*, const int32_t*, \
                                          int, int, int, int, float, cudaStream_t);
ZT_VOCAB_CE(float)
ZT_VOCAB_CE(bf16)
ZT_VOCAB_CE(fp16)
#undef ZT_VOCAB_CE

}  // namespace zt::cuda
