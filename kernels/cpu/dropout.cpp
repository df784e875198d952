#include <cstdint>

#include "kernels/common/dropout.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

// The counter of element i is drop.offset + i (see kernels/common/dropout.h).
template <typename T>
void Kernels::dropout_add_forward(T* out, const T* a, const T* x, int64_t n,
                                  const DropoutParams& drop_in, Exec) {
  const DropoutParams drop = drop_in;  // a local copy: the stores below cannot alias it
  ZT_CHECK(drop.p >= 0.0f && drop.p < 1.0f, "dropout: p={} outside [0, 1)", drop.p);
  if (drop.p == 0.0f) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
    for (int64_t i = 0; i < n; ++i) out[i] = from_float<T>(to_float(a[i]) + to_float(x[i]));
    return;
  }
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin / 4)
  for (int64_t i = 0; i < n; ++i)
    out[i] = from_float<T>(to_float(a[i]) +
                           dropout_apply(to_float(x[i]), drop, static_cast<uint64_t>(i)));
}

template <typename T>
void Kernels::dropout_backward(T* dx, const T* dout, int64_t n, const DropoutParams& drop_in,
                               Exec) {
  const DropoutParams drop = drop_in;
  ZT_CHECK(drop.p >= 0.0f && drop.p < 1.0f, "dropout: p={} outside [0, 1)", drop.p);
  if (drop.p == 0.0f) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
    for (int64_t i = 0; i < n; ++i) dx[i] = dout[i];
    return;
  }
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin / 4)
  for (int64_t i = 0; i < n; ++i)
    dx[i] = from_float<T>(dropout_apply(to_float(dout[i]), drop, static_cast<uint64_t>(i)));
}

#define ZT_DROPOUT(T)                                                                     \
  template void Kernels::dropout_add_forward<T>(T*, const T*, const T*, int64_t,          \
                                                const DropoutParams&, Kernels::Exec);     \
  template void Kernels::dropout_backward<T>(T*, const T*, int64_t, const DropoutParams&, \
                                             Kernels::Exec);
ZT_DROPOUT(float)
ZT_DROPOUT(bf16)
ZT_DROPOUT(fp16)
#undef ZT_DROPOUT

}  // namespace zt::cpu
