#include <cstdint>

#include "kernels/common/dropout.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

// The counter of element i is drop.offset + i (see kernels/common/dropout.h).
void dropout_add_forward(float* out, const float* a, const float* x, int64_t n,
                         const DropoutParams& drop_in) {
  const DropoutParams drop = drop_in;  // a local copy: the stores below cannot alias it
  ZT_CHECK(drop.p >= 0.0f && drop.p < 1.0f, "dropout: p={} outside [0, 1)", drop.p);
  if (drop.p == 0.0f) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + x[i];
    return;
  }
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin / 4)
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + dropout_apply(x[i], drop, static_cast<uint64_t>(i));
}

void dropout_backward(float* dx, const float* dout, int64_t n, const DropoutParams& drop_in) {
  const DropoutParams drop = drop_in;
  ZT_CHECK(drop.p >= 0.0f && drop.p < 1.0f, "dropout: p={} outside [0, 1)", drop.p);
  if (drop.p == 0.0f) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
    for (int64_t i = 0; i < n; ++i) dx[i] = dout[i];
    return;
  }
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin / 4)
  for (int64_t i = 0; i < n; ++i) dx[i] = dropout_apply(dout[i], drop, static_cast<uint64_t>(i));
}

}  // namespace zt::cpu
