// Attention of new query rows against a key/value cache (generation): one block per (query row,
// query head, its key/value head read in place). The block writes the row's scaled scores into
// shared memory (kernels/common/attention.h attention_score), reduces their max, turns them into
// exp(s - max) and reduces their sum (cub BlockReduce), then each thread accumulates output
// elements over the keys in fp32 and rounds once. The same math as the CPU body
// (kernels/cpu/attention_cached.cpp), in another summation order. A decoding step is one query row:
// this is bound by reading the cache, not by compute.
#include <cmath>
#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "kernels/common/attention.h"
#include "kernels/common/math.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

constexpr int kCachedThreads = 128;
using CachedReduce = cub::BlockReduce<float, kCachedThreads>;

struct CachedMax {
  __device__ float operator()(float a, float b) const { return b > a ? b : a; }
};

template <typename T>
__global__ void attention_cached_kernel(T* out, const T* q, int ldq, const T* k, const T* v,
                                        int past, int C, int NH, int NKV, float scale) {
  extern __shared__ float scores[];
  __shared__ typename CachedReduce::TempStorage tmp;
  __shared__ float row_max, row_sum;
  const int i = blockIdx.x, h = blockIdx.y, hd = C / NH;
  const int keys = attention_cached_keys(past, i);
  const T* qi = q + int64_t{i} * ldq + int64_t{h} * hd;
  const int64_t ckv = int64_t{NKV} * hd, kv = int64_t{attention_kv_head(h, NH, NKV)} * hd;
  float m = kMaskedScore;
  for (int j = threadIdx.x; j < keys; j += kCachedThreads) {
    const float s = attention_score(qi, k + int64_t{j} * ckv + kv, hd, scale);
    scores[j] = s;
    m = s > m ? s : m;
  }
  m = CachedReduce(tmp).Reduce(m, CachedMax{});
  if (threadIdx.x == 0) row_max = m;
  __syncthreads();
  float l = 0.0f;
  for (int j = threadIdx.x; j < keys; j += kCachedThreads) {
    const float p = online_softmax_prob(scores[j], row_max);
    scores[j] = p;
    l += p;
  }
  __syncthreads();  // the reduction's storage is reused
  l = CachedReduce(tmp).Sum(l);
  if (threadIdx.x == 0) row_sum = l;
  __syncthreads();
  for (int e = threadIdx.x; e < hd; e += kCachedThreads) {
    float acc = 0.0f;
    for (int j = 0; j < keys; ++j) acc += scores[j] * to_float(v[int64_t{j} * ckv + kv + e]);
    out[int64_t{i} * C + int64_t{h} * hd + e] = from_float<T>(acc / row_sum);
  }
}

}  // namespace
}  // namespace detail

template <typename T>
void Kernels::attention_cached_forward(T* out, const T* q, int ldq, const T* k, const T* v, int n,
                                       int past, int C, int NH, int NKV, cudaStream_t stream) {
  ZT_CU_CHECK(
      n > 0 && past >= 0 && NH > 0 && C > 0 && C % NH == 0 && NKV > 0 && NH % NKV == 0 && ldq >= C,
      detail::cat("attention_cached_forward: bad shape n=", n, " past=", past, " C=", C, " NH=", NH,
                  " NKV=", NKV, " ldq=", ldq));
  const size_t smem = static_cast<size_t>(attention_cached_keys(past, n - 1)) * sizeof(float);
  int dev = 0, limit = 0;
  ZT_CU_CUDA_CHECK(cudaGetDevice(&dev));
  ZT_CU_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const size_t fixed = sizeof(typename detail::CachedReduce::TempStorage) + 2 * sizeof(float);
  ZT_CU_CHECK(
      smem + fixed <= static_cast<size_t>(limit),
      detail::cat("attention_cached_forward: ", past + n,
                  " positions need more shared memory than the ", limit, " bytes a block may use"));
  ZT_CU_CUDA_CHECK(cudaFuncSetAttribute(detail::attention_cached_kernel<T>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
  const float scale = 1.0f / std::sqrt(static_cast<float>(C / NH));
  detail::attention_cached_kernel<T><<<dim3(n, NH), detail::kCachedThreads, smem, stream>>>(
      out, q, ldq, k, v, past, C, NH, NKV, scale);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

#define ZT_ATTENTION_CACHED(T)                                                                   \
  template void Kernels::attention_cached_forward<T>(T*, const T*, int, const T*, const T*, int, \
                                                     int, int, int, int, cudaStream_t);
ZT_ATTENTION_CACHED(float)
ZT_ATTENTION_CACHED(bf16)
ZT_ATTENTION_CACHED(fp16)
#undef ZT_ATTENTION_CACHED

}  // namespace zt::cuda
