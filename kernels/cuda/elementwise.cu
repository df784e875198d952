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

template <typename T>
void Kernels::gelu_forward(T* out, const T* x, int64_t n, cudaStream_t stream) {
  detail::for_each(
      n, stream, [=] __device__(int64_t i) { out[i] = from_float<T>(gelu_tanh(to_float(x[i]))); });
}

template <typename T>
void Kernels::gelu_backward(T* dx, const T* x, const T* dout, int64_t n, cudaStream_t stream) {
  detail::for_each(n, stream, [=] __device__(int64_t i) {
    dx[i] = from_float<T>(to_float(dout[i]) * gelu_tanh_grad(to_float(x[i])));
  });
}

void bias_gelu_forward(float* out, const float* x, const float* bias, int N, int C,
                       cudaStream_t stream) {
  detail::for_each(int64_t{N} * C, stream,
                   [=] __device__(int64_t i) { out[i] = gelu_tanh(x[i] + bias[i % C]); });
}

template <typename T>
void Kernels::dropout_add_forward(T* out, const T* a, const T* x, int64_t n,
                                  const DropoutParams& drop, cudaStream_t stream) {
  check_p(drop);
  if (drop.p == 0.0f) {
    detail::for_each(n, stream, [=] __device__(int64_t i) {
      out[i] = from_float<T>(to_float(a[i]) + to_float(x[i]));
    });
    return;
  }
  detail::for_each(n, stream, [=] __device__(int64_t i) {
    out[i] = from_float<T>(to_float(a[i]) +
                           dropout_apply(to_float(x[i]), drop, static_cast<uint64_t>(i)));
  });
}

template <typename T>
void Kernels::dropout_backward(T* dx, const T* dout, int64_t n, const DropoutParams& drop,
                               cudaStream_t stream) {
  check_p(drop);
  if (drop.p == 0.0f) {
    detail::for_each(n, stream, [=] __device__(int64_t i) { dx[i] = dout[i]; });
    return;
  }
  detail::for_each(n, stream, [=] __device__(int64_t i) {
    dx[i] = from_float<T>(dropout_apply(to_float(dout[i]), drop, static_cast<uint64_t>(i)));
  });
}

template <typename T>
void Kernels::add_inplace(T* y, const T* x, int64_t n, cudaStream_t stream) {
  detail::for_each(n, stream, [=] __device__(int64_t i) {
    y[i] = from_float<T>(to_float(y[i]) + to_float(x[i]));
  });
}

// One launch over all rows (the row-parallel bias, the position table).
template <typename T>
void Kernels::add_broadcast(T* y, const T* x, int64_t rows, int64_t n, cudaStream_t stream) {
  detail::for_each(rows * n, stream, [=] __device__(int64_t i) {
    y[i] = from_float<T>(to_float(y[i]) + to_float(x[i % n]));
  });
}

void Kernels::scale_inplace(float* x, float s, int64_t n, cudaStream_t stream) {
  detail::for_each(n, stream, [=] __device__(int64_t i) { x[i] *= s; });
}

#define ZT_ELEMENTWISE(T)                                                                 \
  template void Kernels::gelu_forward<T>(T*, const T*, int64_t, cudaStream_t);            \
  template void Kernels::gelu_backward<T>(T*, const T*, const T*, int64_t, cudaStream_t); \
  template void Kernels::dropout_add_forward<T>(T*, const T*, const T*, int64_t,          \
                                                const DropoutParams&, cudaStream_t);      \
  template void Kernels::dropout_backward<T>(T*, const T*, int64_t, const DropoutParams&, \
                                             cudaStream_t);                               \
  template void Kernels::add_inplace<T>(T*, const T*, int64_t, cudaStream_t);             \
  template void Kernels::add_broadcast<T>(T*, const T*, int64_t, int64_t, cudaStream_t);
ZT_ELEMENTWISE(float)
ZT_ELEMENTWISE(bf16)
ZT_ELEMENTWISE(fp16)
#undef ZT_ELEMENTWISE

}  // namespace zt::cuda
