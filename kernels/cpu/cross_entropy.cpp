#include <cstdint>
#include <type_traits>

#include "kernels/common/cross_entropy.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

template <typename T>
void Kernels::softmax_cross_entropy(T* logits, float* losses, const int32_t* targets, int N, int V,
                                    int v_real, float dloss, Exec) {
  ZT_CHECK(N > 0 && v_real > 0 && v_real <= V, "softmax_cross_entropy: N={} V={} v_real={}", N, V,
           v_real);
  for (int n = 0; n < N; ++n)
    ZT_CHECK(targets[n] >= 0 && targets[n] < v_real,
             "softmax_cross_entropy: target {} of row {} outside [0, {})", targets[n], n, v_real);
  if constexpr (std::is_same_v<T, float>) {
#pragma omp parallel for schedule(static) if (int64_t{N} * V >= detail::kParallelMin)
    for (int n = 0; n < N; ++n)
      losses[n] = softmax_cross_entropy_row(logits + int64_t{n} * V, V, v_real, targets[n], dloss);
  } else {
    // Half logits: the row in fp32 (per-thread buffer of V floats), the gradient rounded back.
#pragma omp parallel if (int64_t{N} * V >= detail::kParallelMin)
    {
      float* row = detail::thread_buffer<float>(static_cast<size_t>(V));
#pragma omp for schedule(static)
      for (int n = 0; n < N; ++n) {
        T* lr = logits + int64_t{n} * V;
        for (int j = 0; j < V; ++j) row[j] = to_float(lr[j]);
        losses[n] = softmax_cross_entropy_row(row, V, v_real, targets[n], dloss);
        for (int j = 0; j < V; ++j) lr[j] = from_float<T>(row[j]);
      }
    }
  }
}

template void Kernels::softmax_cross_entropy<float>(float*, float*, const int32_t*, int, int, int,
                                                    float, Kernels::Exec);
template void Kernels::softmax_cross_entropy<bf16>(bf16*, float*, const int32_t*, int, int, int,
                                                   float, Kernels::Exec);
template void Kernels::softmax_cross_entropy<fp16>(fp16*, float*, const int32_t*, int, int, int,
                                                   float, Kernels::Exec);

}  // namespace zt::cpu
