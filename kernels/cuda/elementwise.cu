// Element-wise kernels: GeLU, bias + GeLU, dropout, residual add and scaling. Each is one
// grid-stride loop over a kernels/common body, so it computes what the CPU backend computes
// (up to the compiler's choice of fused multiply-adds, which both sides make independently).
#include <cstdint>

#include "kernels/common/dropout.h"
#include "kernels/common/gelu.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace {
void check_p(const DropoutParams& drop) {
  ZT_CU_CHECK(drop.p >= 0.0f && drop.p < 1.0f,
              detail::cat("dropout: p=", drop.p, " outside [0, 1)"));
}
}  // namespace

void gelu_forward(float* out, const float* x, int64_t n, cudaStream_t stream) {
  detail::for_each(n, stream, [=] __device__(int64_t i) { out[i] = gelu_tanh(x[i]); });
}

void gelu_backward(float* dx, const float* x, const float* dout, int64_t n, cudaStream_t stream) {
  detail::for_each(n, stream,
                   [=] __device__(int64_t i) { dx[i] = dout[i] * gelu_tanh_grad(x[i]); });
}

void bias_gelu_forward(float* out, const float* x, const float* bias, int N, int C,
                       cudaStream_t stream) {
  detail::for_each(int64_t{N} * C, stream,
                   [=] __device__(int64_t i) { out[i] = gelu_tanh(x[i] + bias[i % C]); });
}

void dropout_add_forward(float* out, const float* a, const float* x, int64_t n,
                         const DropoutParams& drop, cudaStream_t stream) {
  check_p(drop);
  if (drop.p == 0.0f) {
    detail::for_each(n, stream, [=] __device__(int64_t i) { out[i] = a[i] + x[i]; });
    return;
  }
  detail::for_each(n, stream, [=] __device__(int64_t i) {
    out[i] = a[i] + dropout_apply(x[i], drop, static_cast<uint64_t>(i));
  });
}

void dropout_backward(float* dx, const float* dout, int64_t n, const DropoutParams& drop,
                      cudaStream_t stream) {
  check_p(drop);
  if (drop.p == 0.0f) {
    detail::for_each(n, stream, [=] __device__(int64_t i) { dx[i] = dout[i]; });
    return;
  }
  detail::for_each(n, stream, [=] __device__(int64_t i) {
    dx[i] = dropout_apply(dout[i], drop, static_cast<uint64_t>(i));
  });
}

void add_inplace(float* y, const float* x, int64_t n, cudaStream_t stream) {
  detail::for_each(n, stream, [=] __device__(int64_t i) { y[i] += x[i]; });
}

void scale_inplace(float* x, float s, int64_t n, cudaStream_t stream) {
  detail::for_each(n, stream, [=] __device__(int64_t i) { x[i] *= s; });
}

}  // namespace zt::cuda
