// A mixture of experts' routing and row moves on the CPU: a token per iteration, the math of
// kernels/common/moe.h.
#include <cstdint>
#include <cstring>

#include "kernels/common/moe.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace zt::cpu {

void Kernels::moe_route_forward(float* scores, int32_t* experts, float* weights,
                                const float* logits, int N, const MoeRouting& r, Exec) {
#pragma omp parallel for schedule(static) if (int64_t{N} * r.E >= detail::kParallelMin)
  for (int t = 0; t < N; ++t) {
    const int64_t e = int64_t{t} * r.E, j = int64_t{t} * r.k;
    moe_route_row(logits + e, scores + e, experts + j, weights + j, r);
  }
}

void Kernels::moe_route_backward(float* dlogits, const float* scores, const int32_t* experts,
                                 const float* dweights, const float* dscores, int N,
                                 const MoeRouting& r, Exec) {
#pragma omp parallel for schedule(static) if (int64_t{N} * r.E >= detail::kParallelMin)
  for (int t = 0; t < N; ++t) {
    const int64_t e = int64_t{t} * r.E, j = int64_t{t} * r.k;
    moe_route_row_backward(dlogits + e, scores + e, experts + j, dweights + j, dscores, r);
  }
}

template <typename T>
void Kernels::moe_dispatch(T* rows, const T* x, const int32_t* slots, int N, int k, int C, Exec) {
#pragma omp parallel for schedule(static) if (int64_t{N} * k * C >= detail::kParallelMin)
  for (int t = 0; t < N; ++t)
    for (int j = 0; j < k; ++j) {
      const int32_t s = slots[int64_t{t} * k + j];
      if (s >= 0) std::memcpy(rows + int64_t{s} * C, x + int64_t{t} * C, sizeof(T) * C);
    }
}

template <typename T>
void Kernels::moe_combine(T* y, const T* rows, const int32_t* slots, const float* weights, int N,
                          int k, int C, Exec) {
#pragma omp parallel for schedule(static) if (int64_t{N} * k * C >= detail::kParallelMin)
  for (int t = 0; t < N; ++t) {
    const int32_t* s = slots + int64_t{t} * k;
    const float* w = weights != nullptr ? weights + int64_t{t} * k : nullptr;
    T* out = y + int64_t{t} * C;
    for (int c = 0; c < C; ++c) out[c] = from_float<T>(moe_combine_element(rows, s, w, k, C, c));
  }
}

template <typename T>
void Kernels::moe_combine_backward(T* drows, float* dweights, const T* dy, const T* rows,
                                   const int32_t* slots, const float* weights, int N, int k, int C,
                                   Exec) {
#pragma omp parallel for schedule(static) if (int64_t{N} * k * C >= detail::kParallelMin)
  for (int t = 0; t < N; ++t)
    for (int j = 0; j < k; ++j) {
      const int64_t tj = int64_t{t} * k + j;
      const int32_t s = slots[tj];
      const T* d = dy + int64_t{t} * C;
      if (s < 0) {
        dweights[tj] = 0.0f;
        continue;
      }
      const T* row = rows + int64_t{s} * C;
      T* dr = drows + int64_t{s} * C;
      float dot = 0.0f;
      for (int c = 0; c < C; ++c) {
        dot += to_float(d[c]) * to_float(row[c]);
        dr[c] = from_float<T>(weights[tj] * to_float(d[c]));
      }
      dweights[tj] = dot;
    }
}

#define ZT_MOE(T)                                                                                  \
  template void Kernels::moe_dispatch<T>(T*, const T*, const int32_t*, int, int, int,              \
                                         Kernels::Exec);                                           \
  template void Kernels::moe_combine<T>(T*, const T*, const int32_t*, const float*, int, int, int, \
                                        Kernels::Exec);                                            \
  template void Kernels::moe_combine_backward<T>(T*, float*, const T*, const T*, const int32_t*,   \
                                                 const float*, int, int, int, Kernels::Exec);
ZT_MOE(float)
ZT_MOE(bf16)
ZT_MOE(fp16)
#undef ZT_MOE

}  // namespace zt::cpu
