// LayerNorm: one block per row with cub::BlockReduce for the row statistics (two-pass mean and
// variance, as kernels/common/layernorm.h), and deterministic column sums for dw and db.
#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "kernels/common/dropout.h"
#include "kernels/common/layernorm.h"
#include "kernels/cuda/column_reduce.cuh"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

constexpr int kRowThreads = 256;
using BlockSum = cub::BlockReduce<float, kRowThreads>;

// The layernorm of row `row` (xr = its C values) by the whole block: statistics into mean/rstd,
// the normalised row into o. Each thread reads only xr[threadIdx.x + k * kRowThreads], so a
// caller that just wrote those elements itself needs no barrier first.
template <typename T>
__device__ void layernorm_row(T* o, float* mean, float* rstd, const T* xr, const T* w, const T* b,
                              int C, int64_t row) {
  __shared__ typename BlockSum::TempStorage tmp;
  __shared__ float s_mean, s_rstd;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < C; c += kRowThreads) acc += to_float(xr[c]);
  const float sum = BlockSum(tmp).Sum(acc);
  if (threadIdx.x == 0) s_mean = sum / static_cast<float>(C);
  __syncthreads();  // also frees tmp for the second reduction
  const float mu = s_mean;
  acc = 0.0f;
  for (int c = threadIdx.x; c < C; c += kRowThreads) {
    const float d = to_float(xr[c]) - mu;
    acc += d * d;
  }
  const float sq = BlockSum(tmp).Sum(acc);
  if (threadIdx.x == 0) {
    s_rstd = layernorm_rstd(sq / static_cast<float>(C));
    mean[row] = mu;
    rstd[row] = s_rstd;
  }
  __syncthreads();
  const float rs = s_rstd;
  for (int c = threadIdx.x; c < C; c += kRowThreads)
    o[c] = from_float<T>(layernorm_apply(to_float(xr[c]), mu, rs, to_float(w[c]), to_float(b[c])));
}

template <typename T>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* x, const T* w,
                                         const T* b, int C) {
  const int64_t row = blockIdx.x;
  layernorm_row(out + row * C, mean, rstd, x + row * C, w, b, C, row);
}

// res = a + dropout(x) rounded to T, then the layernorm of that row: one block per row, the
// residual read back from where this thread wrote it (L1/L2) rather than a second kernel.
template <typename T>
__global__ void dropout_add_layernorm_kernel(T* res, T* out, float* mean, float* rstd, const T* a,
                                             const T* x, const T* w, const T* b, int C,
                                             DropoutParams drop) {
  const int64_t row = blockIdx.x;
  const int64_t base = row * C;
  for (int c = threadIdx.x; c < C; c += kRowThreads) {
    const int64_t i = base + c;
    const float d = drop.p == 0.0f ? to_float(x[i])
                                   : dropout_apply(to_float(x[i]), drop, static_cast<uint64_t>(i));
    res[i] = from_float<T>(to_float(a[i]) + d);
  }
  layernorm_row(out + base, mean, rstd, res + base, w, b, C, row);
}

// dx += rstd (g - mean(g) - xhat mean(g xhat)), g = dout * w.
template <typename T>
__global__ void layernorm_dx_kernel(T* dx, const T* dout, const T* x, const T* w, const float* mean,
                                    const float* rstd, int C) {
  __shared__ typename BlockSum::TempStorage tmp;
  __shared__ float s_mg, s_mgx;
  const int64_t row = blockIdx.x;
  const T* xr = x + row * C;
  const T* d = dout + row * C;
  const float mu = mean[row], rs = rstd[row];
  float acc_g = 0.0f, acc_gx = 0.0f;
  for (int c = threadIdx.x; c < C; c += kRowThreads) {
    const float g = to_float(d[c]) * to_float(w[c]);
    acc_g += g;
    acc_gx += g * layernorm_xhat(to_float(xr[c]), mu, rs);
  }
  const float inv_c = 1.0f / static_cast<float>(C);
  const float sg = BlockSum(tmp).Sum(acc_g);
  if (threadIdx.x == 0) s_mg = sg * inv_c;
  __syncthreads();
  const float sgx = BlockSum(tmp).Sum(acc_gx);
  if (threadIdx.x == 0) s_mgx = sgx * inv_c;
  __syncthreads();
  const float mg = s_mg, mgx = s_mgx;
  T* dxr = dx + row * C;
  for (int c = threadIdx.x; c < C; c += kRowThreads)
    dxr[c] = from_float<T>(to_float(dxr[c]) + layernorm_dx(to_float(d[c]) * to_float(w[c]),
                                                           layernorm_xhat(to_float(xr[c]), mu, rs),
                                                           mg, mgx, rs));
}

void check_shape(const char* what, int N, int C) {
  ZT_CU_CHECK(N > 0 && C > 0, cat(what, ": bad shape N=", N, " C=", C));
}

}  // namespace
}  // namespace detail

template <typename T>
void Kernels::layernorm_forward(T* out, float* mean, float* rstd, const T* x, const T* w,
                                const T* b, int N, int C, cudaStream_t stream) {
  detail::check_shape("layernorm_forward", N, C);
  detail::layernorm_forward_kernel<<<N, detail::kRowThreads, 0, stream>>>(out, mean, rstd, x, w, b,
                                                                          C);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void Kernels::dropout_add_layernorm_forward(T* res, T* out, float* mean, float* rstd, const T* a,
                                            const T* x, const T* w, const T* b, int N, int C,
                                            const DropoutParams& drop, cudaStream_t stream) {
  detail::check_shape("dropout_add_layernorm_forward", N, C);
  ZT_CU_CHECK(drop.p >= 0.0f && drop.p < 1.0f,
              detail::cat("dropout: p=", drop.p, " outside [0, 1)"));
  detail::dropout_add_layernorm_kernel<<<N, detail::kRowThreads, 0, stream>>>(res, out, mean, rstd,
                                                                              a, x, w, b, C, drop);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void Kernels::layernorm_backward(T* dx, float* dw, float* db, const T* dout, const T* x, const T* w,
                                 const float* mean, const float* rstd, int N, int C,
                                 cudaStream_t stream) {
  detail::check_shape("layernorm_backward", N, C);
  detail::layernorm_dx_kernel<<<N, detail::kRowThreads, 0, stream>>>(dx, dout, x, w, mean, rstd, C);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
  // dw += sum_n dout * xhat, db += sum_n dout, per column.
  detail::column_reduce<2>(
      N, C, stream,
      [=] __device__(int n, int c) {
        const int64_t i = int64_t{n} * C + c;
        const float d = to_float(dout[i]);
        return detail::Values<2>{{d * layernorm_xhat(to_float(x[i]), mean[n], rstd[n]), d}};
      },
      [=] __device__(int c, const float* tot) {
        dw[c] += tot[0];
        db[c] += tot[1];
      });
}

#define ZT_LAYERNORM(T)                                                                           \
  template void Kernels::layernorm_forward<T>(T*, float*, float*, const T*, const T*, const T*,   \
                                              int, int, cudaStream_t);                            \
  template void Kernels::layernorm_backward<T>(T*, float*, float*, const T*, const T*, const T*,  \
                                               const float*, const float*, int, int,              \
                                               cudaStream_t);                                     \
  template void Kernels::dropout_add_layernorm_forward<T>(T*, T*, float*, float*, const T*,       \
                                                          const T*, const T*, const T*, int, int, \
                                                          const DropoutParams&, cudaStream_t);
ZT_LAYERNORM(float)
ZT_LAYERNORM(bf16)
ZT_LAYERNORM(fp16)
#undef ZT_LAYERNORM

}  // namespace zt::cuda
