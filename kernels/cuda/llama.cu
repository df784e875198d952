// The Llama-family element-wise kernels: RMSNorm (one block per row, cub::BlockReduce for the
// row's sum of squares, deterministic column sums for dw), SwiGLU and rotary embeddings
// (grid-stride loops, int64 indices). The math is kernels/common's, as on the CPU.
#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "kernels/common/rmsnorm.h"
#include "kernels/common/rope.h"
#include "kernels/common/swiglu.h"
#include "kernels/cuda/column_reduce.cuh"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

constexpr int kNormThreads = 256;
using NormSum = cub::BlockReduce<float, kNormThreads>;

template <typename T>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* x, const T* w, int C,
                                       float eps) {
  __shared__ typename NormSum::TempStorage tmp;
  __shared__ float s_rstd;
  const int64_t row = blockIdx.x;
  const T* xr = x + row * C;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < C; c += kNormThreads) {
    const float v = to_float(xr[c]);
    acc += v * v;
  }
  const float sq = NormSum(tmp).Sum(acc);
  if (threadIdx.x == 0) {
    s_rstd = rmsnorm_rstd(sq, C, eps);
    rstd[row] = s_rstd;
  }
  __syncthreads();
  const float rs = s_rstd;
  T* o = out + row * C;
  for (int c = threadIdx.x; c < C; c += kNormThreads)
    o[c] = from_float<T>(rmsnorm_apply(to_float(xr[c]), rs, to_float(w[c])));
}

// dx += rstd (g - xhat mean(g xhat)), g = dout * w.
template <typename T>
__global__ void rmsnorm_dx_kernel(T* dx, const T* dout, const T* x, const T* w, const float* rstd,
                                  int C) {
  __shared__ typename NormSum::TempStorage tmp;
  __shared__ float s_mgx;
  const int64_t row = blockIdx.x;
  const T* xr = x + row * C;
  const T* d = dout + row * C;
  const float rs = rstd[row];
  float acc = 0.0f;
  for (int c = threadIdx.x; c < C; c += kNormThreads)
    acc += to_float(d[c]) * to_float(w[c]) * (to_float(xr[c]) * rs);
  const float s = NormSum(tmp).Sum(acc);
  if (threadIdx.x == 0) s_mgx = s / static_cast<float>(C);
  __syncthreads();
  const float mgx = s_mgx;
  T* dxr = dx + row * C;
  for (int c = threadIdx.x; c < C; c += kNormThreads)
    dxr[c] = from_float<T>(to_float(dxr[c]) + rmsnorm_dx(to_float(d[c]) * to_float(w[c]),
                                                         to_float(xr[c]) * rs, mgx, rs));
}

void check_shape(const char* what, int64_t N, int C) {
  ZT_CU_CHECK(N > 0 && C > 0, cat(what, ": bad shape N=", N, " C=", C));
}

// One element per (token row, head of q and k, pair i): the angle is recomputed per element
// (cheap next to the memory traffic) from the host's inverse frequencies.
template <typename T>
void rope(T* qkv, int B, int Tn, int pos0, int NH, int NKV, int hd, const RopeFreqs& freqs,
          float sign, cudaStream_t stream) {
  ZT_CU_CHECK(B > 0 && Tn > 0 && NH > 0 && NKV > 0 && hd > 0 && hd % 2 == 0,
              cat("rope: bad shape B=", B, " T=", Tn, " NH=", NH, " NKV=", NKV, " hd=", hd));
  ZT_CU_CHECK(freqs.pairs == hd / 2,
              cat("rope: ", freqs.pairs, " inverse frequencies for head dimension ", hd));
  const int half = hd / 2, heads = NH + NKV;
  const int64_t ld = int64_t{NH + 2 * NKV} * hd;
  const int64_t n = int64_t{B} * Tn * heads * half;
  // The table travels by value in the kernel's parameters (1 KiB): no device buffer.
  const RopeFreqs f = freqs;
  for_each(n, stream, [=] __device__(int64_t e) {
    const int i = static_cast<int>(e % half);
    const int64_t rh = e / half;
    const int h = static_cast<int>(rh % heads);
    const int64_t r = rh / heads;
    float c = 0.0f, s = 0.0f;
    rope_cos_sin(pos0 + static_cast<int>(r % Tn), f.inv[i], c, s);
    T* x = qkv + r * ld + int64_t{h} * hd;
    float y0 = 0.0f, y1 = 0.0f;
    rope_rotate(to_float(x[i]), to_float(x[half + i]), c, s, sign, y0, y1);
    x[i] = from_float<T>(y0);
    x[half + i] = from_float<T>(y1);
  });
}

}  // namespace
}  // namespace detail

template <typename T>
void Kernels::rmsnorm_forward(T* out, float* rstd, const T* x, const T* w, int N, int C, float eps,
                              cudaStream_t stream) {
  detail::check_shape("rmsnorm_forward", N, C);
  detail::rmsnorm_forward_kernel<<<N, detail::kNormThreads, 0, stream>>>(out, rstd, x, w, C, eps);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void Kernels::rmsnorm_backward(T* dx, float* dw, const T* dout, const T* x, const T* w,
                               const float* rstd, int N, int C, cudaStream_t stream) {
  detail::check_shape("rmsnorm_backward", N, C);
  detail::rmsnorm_dx_kernel<<<N, detail::kNormThreads, 0, stream>>>(dx, dout, x, w, rstd, C);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
  // dw += sum_n dout * xhat per column.
  detail::column_reduce<1>(
      N, C, stream,
      [=] __device__(int n, int c) {
        const int64_t i = int64_t{n} * C + c;
        return detail::Values<1>{{to_float(dout[i]) * (to_float(x[i]) * rstd[n])}};
      },
      [=] __device__(int c, const float* tot) { dw[c] += tot[0]; });
}

template <typename T>
void Kernels::swiglu_forward(T* y, const T* pre, int64_t N, int F, cudaStream_t stream) {
  detail::for_each(N * F, stream, [=] __device__(int64_t e) {
    const int64_t n = e / F, i = e % F;
    const T* g = pre + n * 2 * F;
    y[e] = from_float<T>(swiglu_apply(to_float(g[i]), to_float(g[F + i])));
  });
}

template <typename T>
void Kernels::swiglu_backward(T* dpre, const T* dy, const T* pre, int64_t N, int F,
                              cudaStream_t stream) {
  detail::for_each(N * F, stream, [=] __device__(int64_t e) {
    const int64_t n = e / F, i = e % F;
    const T* g = pre + n * 2 * F;
    float a = 0.0f, b = 0.0f;
    swiglu_grad(to_float(g[i]), to_float(g[F + i]), to_float(dy[e]), a, b);
    dpre[n * 2 * F + i] = from_float<T>(a);
    dpre[n * 2 * F + F + i] = from_float<T>(b);
  });
}

template <typename T>
void Kernels::rope_forward(T* qkv, int B, int Tn, int NH, int NKV, int hd, const RopeFreqs& freqs,
                           cudaStream_t stream) {
  detail::rope(qkv, B, Tn, 0, NH, NKV, hd, freqs, 1.0f, stream);
}

template <typename T>
void Kernels::rope_backward(T* dqkv, int B, int Tn, int NH, int NKV, int hd, const RopeFreqs& freqs,
                            cudaStream_t stream) {
  detail::rope(dqkv, B, Tn, 0, NH, NKV, hd, freqs, -1.0f, stream);
}

template <typename T>
void Kernels::rope_forward_at(T* qkv, int n, int pos0, int NH, int NKV, int hd,
                              const RopeFreqs& freqs, cudaStream_t stream) {
  ZT_CU_CHECK(pos0 >= 0, detail::cat("rope_forward_at: position ", pos0, " < 0"));
  detail::rope(qkv, 1, n, pos0, NH, NKV, hd, freqs, 1.0f, stream);
}

template <typename T>
void Kernels::rope_backward_at(T* dqkv, int n, int pos0, int NH, int NKV, int hd,
                               const RopeFreqs& freqs, cudaStream_t stream) {
  ZT_CU_CHECK(pos0 >= 0, detail::cat("rope_backward_at: position ", pos0, " < 0"));
  detail::rope(dqkv, 1, n, pos0, NH, NKV, hd, freqs, -1.0f, stream);
}

#define ZT_LLAMA(T)                                                                              \
  template void Kernels::rmsnorm_forward<T>(T*, float*, const T*, const T*, int, int, float,     \
                                            cudaStream_t);                                       \
  template void Kernels::rmsnorm_backward<T>(T*, float*, const T*, const T*, const T*,           \
                                             const float*, int, int, cudaStream_t);              \
  template void Kernels::swiglu_forward<T>(T*, const T*, int64_t, int, cudaStream_t);            \
  template void Kernels::swiglu_backward<T>(T*, const T*, const T*, int64_t, int, cudaStream_t); \
  template void Kernels::rope_forward<T>(T*, int, int, int, int, int, const RopeFreqs&,          \
                                         cudaStream_t);                                          \
  template void Kernels::rope_backward<T>(T*, int, int, int, int, int, const RopeFreqs&,         \
                                          cudaStream_t);                                         \
  template void Kernels::rope_forward_at<T>(T*, int, int, int, int, int, const RopeFreqs&,       \
                                            cudaStream_t);                                       \
  template void Kernels::rope_backward_at<T>(T*, int, int, int, int, int, const RopeFreqs&,      \
                                             cudaStream_t);
ZT_LLAMA(float)
ZT_LLAMA(bf16)
ZT_LLAMA(fp16)
#undef ZT_LLAMA

}  // namespace zt::cuda
