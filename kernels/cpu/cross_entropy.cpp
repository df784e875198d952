#include <cmath>
#include <cstdint>
#include <limits>
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

// The vocab-parallel passes. fp32 rows are read in place; a half row is widened into a per-thread
// buffer. The arithmetic is the fused kernel's: lane_max, exp_f32, lane_sum, one rounding of the
// half gradient.
namespace {

bool parallel_rows(int N, int V) {
  return int64_t{N} * V >= detail::kParallelMin;
}

}  // namespace

template <typename T>
void Kernels::vocab_ce_max(const T* logits, float* mx, int N, int V, int v_begin, int v_real,
                           Exec) {
  const int real = vocab_ce_real(V, v_begin, v_real);
#pragma omp parallel for schedule(static) if (parallel_rows(N, V))
  for (int n = 0; n < N; ++n)
    mx[n] = real > 0 ? lane_max(detail::widened_row(logits + int64_t{n} * V, real), real)
                     : -std::numeric_limits<float>::infinity();
}

template <typename T>
void Kernels::vocab_ce_sum_exp(T* logits, float* sum_z, const float* mx, const int32_t* targets,
                               int N, int V, int v_begin, int v_real, Exec) {
  for (int n = 0; n < N; ++n)
    ZT_CHECK(targets[n] >= 0 && targets[n] < v_real,
             "vocab_ce_sum_exp: target {} of row {} outside [0, {})", targets[n], n, v_real);
  const int real = vocab_ce_real(V, v_begin, v_real);
#pragma omp parallel for schedule(static) if (parallel_rows(N, V))
  for (int n = 0; n < N; ++n) {
    T* row = logits + int64_t{n} * V;
    const int t = vocab_ce_local_target(targets[n], V, v_begin);
    sum_z[N + n] = t >= 0 ? to_float(row[t]) - mx[n] : 0.0f;
    if constexpr (std::is_same_v<T, float>) {
      for (int j = 0; j < real; ++j) row[j] = exp_f32(row[j] - mx[n]);
      sum_z[n] = real > 0 ? lane_sum(row, real) : 0.0f;
    } else {
      float* e = detail::thread_buffer<float>(static_cast<size_t>(real));
      for (int j = 0; j < real; ++j) e[j] = exp_f32(to_float(row[j]) - mx[n]);
      sum_z[n] = real > 0 ? lane_sum(e, real) : 0.0f;
    }
  }
}

template <typename T>
void Kernels::vocab_ce_grad(T* logits, float* losses, const float* mx, const float* sum_z,
                            const int32_t* targets, int N, int V, int v_begin, int v_real,
                            float dloss, Exec) {
  const int real = vocab_ce_real(V, v_begin, v_real);
#pragma omp parallel for schedule(static) if (parallel_rows(N, V))
  for (int n = 0; n < N; ++n) {
    T* row = logits + int64_t{n} * V;
    const float scale = dloss / sum_z[n];
    const int t = vocab_ce_local_target(targets[n], V, v_begin);
    if constexpr (std::is_same_v<T, float>) {
      for (int j = 0; j < real; ++j) row[j] *= scale;
      for (int j = real; j < V; ++j) row[j] = 0.0f;
      if (t >= 0) row[t] -= dloss;
    } else {
      for (int j = 0; j < real; ++j) {
        float g = exp_f32(to_float(row[j]) - mx[n]) * scale;
        if (j == t) g -= dloss;
        row[j] = from_float<T>(g);
      }
      for (int j = real; j < V; ++j) row[j] = from_float<T>(0.0f);
    }
    losses[n] = vocab_ce_loss(sum_z[n], sum_z[N + n]);
  }
}

#define ZT_VOCAB_CE(T)                                                                            \
  template void Kernels::vocab_ce_max<T>(const T*, float*, int, int, int, int, Kernels::Exec);    \
  template void Kernels::vocab_ce_sum_exp<T>(T*, float*, const float*, const int32_t*, int, int,  \
                                             int, int, Kernels::Exec);                            \
  template void Kernels::vocab_ce_grad<T>(T*, float*, const float*, const float*, const int32_t*, \
                                          int, int, int, int, float, Kernels::Exec);
ZT_VOCAB_CE(float)
ZT_VOCAB_CE(bf16)
ZT_VOCAB_CE(fp16)
#undef ZT_VOCAB_CE

}  // namespace zt::cpu
