#include "src/tensor_parallel/vocab_parallel_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/common/math.h"
#include "kernels/common/reduce.h"
#include "src/core/error.h"
#include "src/tensor_parallel/mappings.h"

namespace zt::tp {

void vocab_parallel_cross_entropy(comm::Communicator* tp, float* logits, float* losses,
                                  const int32_t* targets, int N, VocabRange range, int v_real,
                                  float dloss, float* scratch) {
  ZT_CHECK(N > 0 && range.local > 0 && v_real > 0, "vocab_parallel_cross_entropy: N={} V={}", N,
           range.local);
  for (int n = 0; n < N; ++n)
    ZT_CHECK(targets[n] >= 0 && targets[n] < v_real,
             "vocab_parallel_cross_entropy: target {} of row {} outside [0, {})", targets[n], n,
             v_real);
  const int V = range.local;
  // Real (unpadded) columns of this shard: a shard may be all padding.
  const int real = std::clamp(v_real - range.begin, 0, V);
  float* mx = scratch;    // [N]
  float* sum_z = mx + N;  // [N] sum-exp, then [N] target logit: one all-reduce for both
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
#pragma omp parallel for schedule(static) if (int64_t{N} * V >= (int64_t{1} << 15))
  for (int n = 0; n < N; ++n) mx[n] = real > 0 ? lane_max(logits + int64_t{n} * V, real) : kNegInf;
  all_reduce(tp, mx, N, comm::ReduceOp::Max);
#pragma omp parallel for schedule(static) if (int64_t{N} * V >= (int64_t{1} << 15))
  for (int n = 0; n < N; ++n) {
    float* row = logits + int64_t{n} * V;
    const int t = targets[n] - range.begin;
    sum_z[N + n] = t >= 0 && t < V ? row[t] - mx[n] : 0.0f;
    for (int j = 0; j < real; ++j) row[j] = exp_f32(row[j] - mx[n]);
    sum_z[n] = real > 0 ? lane_sum(row, real) : 0.0f;
  }
  all_reduce(tp, sum_z, 2 * int64_t{N}, comm::ReduceOp::Sum);
#pragma omp parallel for schedule(static) if (int64_t{N} * V >= (int64_t{1} << 15))
  for (int n = 0; n < N; ++n) {
    float* row = logits + int64_t{n} * V;
    const float scale = dloss / sum_z[n];
    for (int j = 0; j < real; ++j) row[j] *= scale;
    for (int j = real; j < V; ++j) row[j] = 0.0f;
    const int t = targets[n] - range.begin;
    if (t >= 0 && t < V) row[t] -= dloss;
    losses[n] = std::log(sum_z[n]) - sum_z[N + n];
  }
}

}  // namespace zt::tp
