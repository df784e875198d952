#include <cstdint>
#include <type_traits>

#include "kernels/common/reduce.h"
#include "kernels/common/rmsnorm.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

template <typename T>
void Kernels::rmsnorm_forward(T* out, float* rstd, const T* x, const T* w, int N, int C, float eps,
                              Exec) {
  ZT_CHECK(N > 0 && C > 0, "rmsnorm_forward: bad shape N={} C={}", N, C);
#pragma omp parallel for schedule(static) if (int64_t{N} * C >= detail::kParallelMin)
  for (int n = 0; n < N; ++n) {
    const float* xr = detail::widened_row<1>(x + int64_t{n} * C, C);
    const float rs = rmsnorm_row_rstd(xr, C, eps);
    rstd[n] = rs;
    T* o = out + int64_t{n} * C;
    for (int c = 0; c < C; ++c) o[c] = from_float<T>(rmsnorm_apply(xr[c], rs, to_float(w[c])));
  }
}

// Rows in parallel for dx, then fixed channel blocks in parallel for dw (each block sums the
// rows in order): deterministic for any thread count.
template <typename T>
void Kernels::rmsnorm_backward(T* dx, float* dw, const T* dout, const T* x, const T* w,
                               const float* rstd, int N, int C, Exec) {
  ZT_CHECK(N > 0 && C > 0, "rmsnorm_backward: bad shape N={} C={}", N, C);
  const bool par = int64_t{N} * C >= detail::kParallelMin;
  const float inv_c = 1.0f / static_cast<float>(C);
#pragma omp parallel if (par)
  {
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const T* xr = x + int64_t{n} * C;
      const T* d = dout + int64_t{n} * C;
      T* dxr = dx + int64_t{n} * C;
      const float rs = rstd[n];
      float acc[kLanes] = {};
      int c = 0;
      for (; c + kLanes <= C; c += kLanes)
        for (int l = 0; l < kLanes; ++l)
          acc[l] += to_float(d[c + l]) * to_float(w[c + l]) * (to_float(xr[c + l]) * rs);
      for (int l = 0; c + l < C; ++l)
        acc[l] += to_float(d[c + l]) * to_float(w[c + l]) * (to_float(xr[c + l]) * rs);
      const float mgx = combine_lanes(acc) * inv_c;
      for (c = 0; c < C; ++c)
        dxr[c] = from_float<T>(to_float(dxr[c]) + rmsnorm_dx(to_float(d[c]) * to_float(w[c]),
                                                             to_float(xr[c]) * rs, mgx, rs));
    }
    detail::channel_block_sums<1>(N, C, {dw}, [&](int n, int c0, int len, auto& acc) {
      const T* xr = x + int64_t{n} * C + c0;
      const T* d = dout + int64_t{n} * C + c0;
      const float rs = rstd[n];
      for (int j = 0; j < len; ++j) acc[0][j] += to_float(d[j]) * (to_float(xr[j]) * rs);
    });
  }
}

#define ZT_RMSNORM(T)                                                                        \
  template void Kernels::rmsnorm_forward<T>(T*, float*, const T*, const T*, int, int, float, \
                                            Kernels::Exec);                                  \
  template void Kernels::rmsnorm_backward<T>(T*, float*, const T*, const T*, const T*,       \
                                             const float*, int, int, Kernels::Exec);
ZT_RMSNORM(float)
ZT_RMSNORM(bf16)
ZT_RMSNORM(fp16)
#undef ZT_RMSNORM

}  // namespace zt::cpu
