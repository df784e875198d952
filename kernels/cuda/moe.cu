// A mixture of experts' routing and row moves on CUDA: a thread per token for the routing (E is
// tens to hundreds), a thread per element for the row moves; the math of kernels/common/moe.h.
#include <cstdint>

#include "kernels/common/moe.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {

void Kernels::moe_route_forward(float* scores, int32_t* experts, float* weights,
                                const float* logits, int N, const MoeRouting& r,
                                cudaStream_t stream) {
  const MoeRouting rr = r;
  detail::for_each(N, stream, [=] __device__(int64_t t) {
    moe_route_row(logits + t * rr.E, scores + t * rr.E, experts + t * rr.k, weights + t * rr.k, rr);
  });
}

void Kernels::moe_route_backward(float* dlogits, const float* scores, const int32_t* experts,
                                 const float* dweights, const float* dscores, int N,
                                 const MoeRouting& r, cudaStream_t stream) {
  const MoeRouting rr = r;
  detail::for_each(N, stream, [=] __device__(int64_t t) {
    moe_route_row_backward(dlogits + t * rr.E, scores + t * rr.E, experts + t * rr.k,
                           dweights + t * rr.k, dscores, rr);
  });
}

template <typename T>
void Kernels::moe_dispatch(T* rows, const T* x, const int32_t* slots, int N, int k, int C,
                           cudaStream_t stream) {
  detail::for_each(int64_t{N} * k * C, stream, [=] __device__(int64_t e) {
    const int64_t tj = e / C, c = e % C;
    const int32_t s = slots[tj];
    if (s >= 0) rows[int64_t{s} * C + c] = x[(tj / k) * C + c];
  });
}

template <typename T>
void Kernels::moe_combine(T* y, const T* rows, const int32_t* slots, const float* weights, int N,
                          int k, int C, cudaStream_t stream) {
  detail::for_each(int64_t{N} * C, stream, [=] __device__(int64_t e) {
    const int64_t t = e / C;
    const float* w = weights != nullptr ? weights + t * k : nullptr;
    y[e] =
        from_float<T>(moe_combine_element(rows, slots + t * k, w, k, C, static_cast<int>(e % C)));
  });
}

template <typename T>
void Kernels::moe_combine_backward(T* drows, float* dweights, const T* dy, const T* rows,
                                   const int32_t* slots, const float* weights, int N, int k, int C,
                                   cudaStream_t stream) {
  detail::for_each(int64_t{N} * k * C, stream, [=] __device__(int64_t e) {
    const int64_t tj = e / C, c = e % C;
    const int32_t s = slots[tj];
    if (s >= 0)
      drows[int64_t{s} * C + c] = from_float<T>(weights[tj] * to_float(dy[(tj / k) * C + c]));
  });
  // The weights' gradients: a thread per slot, its dot product in column order (deterministic).
  detail::for_each(int64_t{N} * k, stream, [=] __device__(int64_t tj) {
    const int32_t s = slots[tj];
    float dot = 0.0f;
    if (s >= 0)
      for (int c = 0; c < C; ++c)
        dot += to_float(dy[(tj / k) * C + c]) * to_float(rows[int64_t{s} * C + c]);
    dweights[tj] = dot;
  });
}

#define ZT_MOE(T)                                                                                  \
  template void Kernels::moe_dispatch<T>(T*, const T*, const int32_t*, int, int, int,              \
                                         cudaStream_t);                                            \
  template void Kernels::moe_combine<T>(T*, const T*, const int32_t*, const float*, int, int, int, \
                                        cudaStream_t);                                             \
  template void Kernels::moe_combine_backward<T>(T*, float*, const T*, const T*, const int32_t*,   \
                                                 const float*, int, int, int, cudaStream_t);
ZT_MOE(float)
ZT_MOE(bf16)
ZT_MOE(fp16)
#undef ZT_MOE

}  // namespace zt::cuda
