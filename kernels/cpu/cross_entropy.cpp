#include <cstdint>

#include "kernels/common/cross_entropy.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

void softmax_cross_entropy(float* logits, float* losses, const int32_t* targets, int N, int V,
                           int v_real, float dloss) {
  ZT_CHECK(N > 0 && v_real > 0 && v_real <= V, "softmax_cross_entropy: N={} V={} v_real={}", N, V,
           v_real);
  for (int n = 0; n < N; ++n)
    ZT_CHECK(targets[n] >= 0 && targets[n] < v_real,
             "softmax_cross_entropy: target {} of row {} outside [0, {})", targets[n], n, v_real);
#pragma omp parallel for schedule(static) if (int64_t{N} * V >= detail::kParallelMin)
  for (int n = 0; n < N; ++n)
    losses[n] = softmax_cross_entropy_row(logits + int64_t{n} * V, V, v_real, targets[n], dloss);
}

}  // namespace zt::cpu
