#include "src/tensor_parallel/vocab_parallel_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/common/math.h"
#include "kernels/common/reduce.h"
#include "src/core/error.h"
#include "src/tensor_parallel/mappings.h"

#include <type_traits>
#include <vector>

namespace zt::tp {
namespace {

// The three passes on host memory; `reduce(p, n, op)` all-reduces n host floats over tp. The
// arithmetic is fp32 whatever the logits' type: half logits are widened on read, and the
// gradient, recomputed from them in pass 3, is rounded once on store (fp32 logits keep the
// exponentials of pass 2 in place, as they always did).
template <typename T, typename Reduce>
void cross_entropy_on_host(T* logits, float* losses, const int32_t* targets, int N,
                           VocabRange range, int v_real, float dloss, float* scratch,
                           Reduce&& reduce) {
  constexpr bool kF32 = std::is_same_v<T, float>;
  const int V = range.local;
  // Real (unpadded) columns of this shard: a shard may be all padding.
  const int real = std::clamp(v_real - range.begin, 0, V);
  float* mx = scratch;    // [N]
  float* sum_z = mx + N;  // [N] sum-exp, then [N] target logit: one all-reduce for both
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  auto widened = [&](const T* row, float* buf) -> const float* {
    if constexpr (kF32) {
      return row;
    } else {
      for (int j = 0; j < real; ++j) buf[j] = to_float(row[j]);
      return buf;
    }
  };
  auto row_buffer = [&]() -> float* {
    if constexpr (kF32) {
      return nullptr;
    } else {
      thread_local std::vector<float> buf;
      if (buf.size() < static_cast<size_t>(V)) buf.resize(static_cast<size_t>(V));
      return buf.data();
    }
  };
#pragma omp parallel for schedule(static) if (int64_t{N} * V >= (int64_t{1} << 15))
  for (int n = 0; n < N; ++n)
    mx[n] = real > 0 ? lane_max(widened(logits + int64_t{n} * V, row_buffer()), real) : kNegInf;
  reduce(mx, int64_t{N}, comm::ReduceOp::Max);
#pragma omp parallel for schedule(static) if (int64_t{N} * V >= (int64_t{1} << 15))
  for (int n = 0; n < N; ++n) {
    T* row = logits + int64_t{n} * V;
    const int t = targets[n] - range.begin;
    sum_z[N + n] = t >= 0 && t < V ? to_float(row[t]) - mx[n] : 0.0f;
    if constexpr (kF32) {
      for (int j = 0; j < real; ++j) row[j] = exp_f32(row[j] - mx[n]);
      sum_z[n] = real > 0 ? lane_sum(row, real) : 0.0f;
    } else {
      float* e = row_buffer();
      for (int j = 0; j < real; ++j) e[j] = exp_f32(to_float(row[j]) - mx[n]);
      sum_z[n] = real > 0 ? lane_sum(e, real) : 0.0f;
    }
  }
  reduce(sum_z, 2 * int64_t{N}, comm::ReduceOp::Sum);
#pragma omp parallel for schedule(static) if (int64_t{N} * V >= (int64_t{1} << 15))
  for (int n = 0; n < N; ++n) {
    T* row = logits + int64_t{n} * V;
    const float scale = dloss / sum_z[n];
    const int t = targets[n] - range.begin;
    if constexpr (kF32) {
      for (int j = 0; j < real; ++j) row[j] *= scale;
      for (int j = real; j < V; ++j) row[j] = 0.0f;
      if (t >= 0 && t < V) row[t] -= dloss;
    } else {
      for (int j = 0; j < real; ++j) {
        float g = exp_f32(to_float(row[j]) - mx[n]) * scale;
        if (j == t) g -= dloss;
        row[j] = from_float<T>(g);
      }
      for (int j = real; j < V; ++j) row[j] = from_float<T>(0.0f);
    }
    losses[n] = std::log(sum_z[n]) - sum_z[N + n];
  }
}

void check_targets(const int32_t* targets, int N, int v_real) {
  for (int n = 0; n < N; ++n)
    ZT_CHECK(targets[n] >= 0 && targets[n] < v_real,
             "vocab_parallel_cross_entropy: target {} of row {} outside [0, {})", targets[n], n,
             v_real);
}

}  // namespace

int64_t host_scratch_floats(int N, int v_local) {
  // logits, targets (int32, one float each), the 3N reductions and the N losses.
  return int64_t{N} * v_local + int64_t{N} + 3 * int64_t{N} + int64_t{N};
}

void vocab_parallel_cross_entropy(Backend& be, comm::Communicator* tp, Ref logits, float* losses,
                                  const int32_t* targets, int N, VocabRange range, int v_real,
                                  float dloss, float* scratch, float* host_scratch) {
  ZT_CHECK(N > 0 && range.local > 0 && v_real > 0, "vocab_parallel_cross_entropy: N={} V={}", N,
           range.local);
  if (be.host_accessible()) {
    check_targets(targets, N, v_real);
    visit_dtype(logits.t, [&](auto t) {
      cross_entropy_on_host(
          logits.as<decltype(t)>(), losses, targets, N, range, v_real, dloss, scratch,
          [&](float* p, int64_t n, comm::ReduceOp op) { all_reduce(be, tp, p, n, op); });
    });
    return;
  }
  ZT_CHECK(host_scratch != nullptr, "vocab_parallel_cross_entropy: no host staging on {}",
           device_name(be.device()));
  const int64_t nv = int64_t{N} * range.local;
  // nv floats hold the logits in any working precision (half needs half of them).
  float* h_logits = host_scratch;
  auto* h_targets = reinterpret_cast<int32_t*>(h_logits + nv);
  float* h_scratch = h_logits + nv + N;
  float* h_losses = h_scratch + 3 * int64_t{N};
  be.copy_to_host(h_logits, logits.p, logits.bytes(nv));
  be.copy_to_host(h_targets, targets, static_cast<size_t>(N) * 4);
  check_targets(h_targets, N, v_real);
  // The reductions run on the device group: through the device scratch at the same offset.
  visit_dtype(logits.t, [&](auto t) {
    cross_entropy_on_host(static_cast<decltype(t)*>(static_cast<void*>(h_logits)), h_losses,
                          h_targets, N, range, v_real, dloss, h_scratch,
                          [&](float* p, int64_t n, comm::ReduceOp op) {
                            float* d = scratch + (p - h_scratch);
                            be.copy_to_device(d, p, static_cast<size_t>(n) * 4);
                            all_reduce(be, tp, d, n, op);
                            be.copy_to_host(p, d, static_cast<size_t>(n) * 4);
                          });
  });
  be.copy_to_device(logits.p, h_logits, logits.bytes(nv));
  be.copy_to_device(losses, h_losses, static_cast<size_t>(N) * 4);
}

}  // namespace zt::tp
