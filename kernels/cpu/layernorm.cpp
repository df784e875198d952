#include <cstdint>

#include "kernels/common/layernorm.h"
#include "kernels/common/reduce.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int N, int C) {
  ZT_CHECK(N > 0 && C > 0, "layernorm_forward: bad shape N={} C={}", N, C);
#pragma omp parallel for schedule(static) if (int64_t{N} * C >= detail::kParallelMin)
  for (int n = 0; n < N; ++n) {
    const float* xr = x + int64_t{n} * C;
    float* o = out + int64_t{n} * C;
    float mu, rs;
    layernorm_row_stats(xr, C, mu, rs);
    for (int c = 0; c < C; ++c) o[c] = layernorm_apply(xr[c], mu, rs, w[c], b[c]);
    mean[n] = mu;
    rstd[n] = rs;
  }
}

// Two passes, both deterministic for any thread count: rows in parallel for dx, then fixed
// channel blocks in parallel for dw and db (each block sums the rows in order).
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int N, int C) {
  ZT_CHECK(N > 0 && C > 0, "layernorm_backward: bad shape N={} C={}", N, C);
  const bool par = int64_t{N} * C >= detail::kParallelMin;
  const float inv_c = 1.0f / static_cast<float>(C);
#pragma omp parallel if (par)
  {
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* xr = x + int64_t{n} * C;
      const float* d = dout + int64_t{n} * C;
      float* dxr = dx + int64_t{n} * C;
      const float mu = mean[n], rs = rstd[n];
      // Row means of g = dout * w and of g * xhat, in fixed lanes.
      float acc_g[kLanes] = {}, acc_gx[kLanes] = {};
      int c = 0;
      for (; c + kLanes <= C; c += kLanes)
        for (int l = 0; l < kLanes; ++l) {
          const float g = d[c + l] * w[c + l];
          acc_g[l] += g;
          acc_gx[l] += g * layernorm_xhat(xr[c + l], mu, rs);
        }
      for (int l = 0; c + l < C; ++l) {
        const float g = d[c + l] * w[c + l];
        acc_g[l] += g;
        acc_gx[l] += g * layernorm_xhat(xr[c + l], mu, rs);
      }
      const float mg = combine_lanes(acc_g) * inv_c;
      const float mgx = combine_lanes(acc_gx) * inv_c;
      for (c = 0; c < C; ++c) {
        const float xhat = layernorm_xhat(xr[c], mu, rs);
        dxr[c] += layernorm_dx(d[c] * w[c], xhat, mg, mgx, rs);
      }
    }
    constexpr int kBlock = 64;
    const int nblocks = (C + kBlock - 1) / kBlock;
#pragma omp for schedule(static)
    for (int blk = 0; blk < nblocks; ++blk) {
      const int c0 = blk * kBlock;
      const int len = C - c0 < kBlock ? C - c0 : kBlock;
      float aw[kBlock] = {}, ab[kBlock] = {};
      for (int n = 0; n < N; ++n) {
        const float* xr = x + int64_t{n} * C + c0;
        const float* d = dout + int64_t{n} * C + c0;
        const float mu = mean[n], rs = rstd[n];
        for (int j = 0; j < len; ++j) {
          aw[j] += d[j] * layernorm_xhat(xr[j], mu, rs);
          ab[j] += d[j];
        }
      }
      for (int j = 0; j < len; ++j) {
        dw[c0 + j] += aw[j];
        db[c0 + j] += ab[j];
      }
    }
  }
}

}  // namespace zt::cpu
