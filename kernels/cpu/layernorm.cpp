#include <cstdint>
#include <type_traits>

#include "kernels/common/dropout.h"
#include "kernels/common/layernorm.h"
#include "kernels/common/reduce.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

namespace {

// The layernorm of one widened row into o, its statistics into mu and rs.
template <typename T>
void layernorm_row(T* o, float& mu, float& rs, const float* xr, const T* w, const T* b, int C) {
  layernorm_row_stats(xr, C, mu, rs);
  for (int c = 0; c < C; ++c)
    o[c] = from_float<T>(layernorm_apply(xr[c], mu, rs, to_float(w[c]), to_float(b[c])));
}

}  // namespace

template <typename T>
void Kernels::layernorm_forward(T* out, float* mean, float* rstd, const T* x, const T* w,
                                const T* b, int N, int C, Exec) {
  ZT_CHECK(N > 0 && C > 0, "layernorm_forward: bad shape N={} C={}", N, C);
#pragma omp parallel for schedule(static) if (int64_t{N} * C >= detail::kParallelMin)
  for (int n = 0; n < N; ++n) {
    layernorm_row(out + int64_t{n} * C, mean[n], rstd[n],
                  detail::widened_row(x + int64_t{n} * C, C), w, b, C);
  }
}

// Each row: the residual into res (rounded to T, the mask counter of dropout_add_forward), then the
// layernorm of the row just written while it is in cache, with the statistics of
// layernorm_forward on the same widened values: bitwise the two ops in sequence.
template <typename T>
void Kernels::dropout_add_layernorm_forward(T* res, T* out, float* mean, float* rstd, const T* a,
                                            const T* x, const T* w, const T* b, int N, int C,
                                            const DropoutParams& drop_in, Exec) {
  const DropoutParams drop = drop_in;  // a local copy: the stores below cannot alias it
  ZT_CHECK(N > 0 && C > 0, "dropout_add_layernorm_forward: bad shape N={} C={}", N, C);
  ZT_CHECK(drop.p >= 0.0f && drop.p < 1.0f, "dropout: p={} outside [0, 1)", drop.p);
#pragma omp parallel for schedule(static) if (int64_t{N} * C >= detail::kParallelMin)
  for (int n = 0; n < N; ++n) {
    const int64_t row = int64_t{n} * C;
    T* r = res + row;
    if (drop.p == 0.0f) {
      for (int c = 0; c < C; ++c) r[c] = from_float<T>(to_float(a[row + c]) + to_float(x[row + c]));
    } else {
      for (int c = 0; c < C; ++c)
        r[c] = from_float<T>(to_float(a[row + c]) + dropout_apply(to_float(x[row + c]), drop,
                                                                  static_cast<uint64_t>(row + c)));
    }
    layernorm_row(out + row, mean[n], rstd[n], detail::widened_row(r, C), w, b, C);
  }
}

// Two passes, both deterministic for any thread count: rows in parallel for dx, then fixed
// channel blocks in parallel for dw and db (each block sums the rows in order).
template <typename T>
void Kernels::layernorm_backward(T* dx, float* dw, float* db, const T* dout, const T* x, const T* w,
                                 const float* mean, const float* rstd, int N, int C, Exec) {
  ZT_CHECK(N > 0 && C > 0, "layernorm_backward: bad shape N={} C={}", N, C);
  const bool par = int64_t{N} * C >= detail::kParallelMin;
  const float inv_c = 1.0f / static_cast<float>(C);
#pragma omp parallel if (par)
  {
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const T* xr = x + int64_t{n} * C;
      const T* d = dout + int64_t{n} * C;
      T* dxr = dx + int64_t{n} * C;
      const float mu = mean[n], rs = rstd[n];
      // Row means of g = dout * w and of g * xhat, in fixed lanes.
      float acc_g[kLanes] = {}, acc_gx[kLanes] = {};
      int c = 0;
      for (; c + kLanes <= C; c += kLanes)
        for (int l = 0; l < kLanes; ++l) {
          const float g = to_float(d[c + l]) * to_float(w[c + l]);
          acc_g[l] += g;
          acc_gx[l] += g * layernorm_xhat(to_float(xr[c + l]), mu, rs);
        }
      for (int l = 0; c + l < C; ++l) {
        const float g = to_float(d[c + l]) * to_float(w[c + l]);
        acc_g[l] += g;
        acc_gx[l] += g * layernorm_xhat(to_float(xr[c + l]), mu, rs);
      }
      const float mg = combine_lanes(acc_g) * inv_c;
      const float mgx = combine_lanes(acc_gx) * inv_c;
      for (c = 0; c < C; ++c) {
        const float xhat = layernorm_xhat(to_float(xr[c]), mu, rs);
        dxr[c] = from_float<T>(to_float(dxr[c]) +
                               layernorm_dx(to_float(d[c]) * to_float(w[c]), xhat, mg, mgx, rs));
      }
    }
    detail::channel_block_sums<2>(N, C, {dw, db}, [&](int n, int c0, int len, auto& acc) {
      const T* xr = x + int64_t{n} * C + c0;
      const T* d = dout + int64_t{n} * C + c0;
      const float mu = mean[n], rs = rstd[n];
      for (int j = 0; j < len; ++j) {
        const float dj = to_float(d[j]);
        acc[0][j] += dj * layernorm_xhat(to_float(xr[j]), mu, rs);
        acc[1][j] += dj;
      }
    });
  }
}

#define ZT_LAYERNORM(T)                                                                           \
  template void Kernels::layernorm_forward<T>(T*, float*, float*, const T*, const T*, const T*,   \
                                              int, int, Kernels::Exec);                           \
  template void Kernels::layernorm_backward<T>(T*, float*, float*, const T*, const T*, const T*,  \
                                               const float*, const float*, int, int,              \
                                               Kernels::Exec);                                    \
  template void Kernels::dropout_add_layernorm_forward<T>(T*, T*, float*, float*, const T*,       \
                                                          const T*, const T*, const T*, int, int, \
                                                          const DropoutParams&, Kernels::Exec);
ZT_LAYERNORM(float)
ZT_LAYERNORM(bf16)
ZT_LAYERNORM(fp16)
#undef ZT_LAYERNORM

}  // namespace zt::cpu
