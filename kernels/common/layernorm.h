#pragma once
// LayerNorm over one row of C channels: xhat = (x - mean) * rstd, out = xhat * w + b, with
// rstd = 1 / sqrt(var + eps) and the biased variance (as torch.nn.LayerNorm).
#include <cmath>

#include "kernels/common/reduce.h"
#include "src/core/hd.h"

namespace zt {

inline constexpr float kLayerNormEps = 1e-5f;

// 1 / sqrt(var + eps) from the biased variance.
ZT_HD float layernorm_rstd(float var) {
  return 1.0f / std::sqrt(var + kLayerNormEps);
}

// Two-pass mean and variance (no E[x^2] - E[x]^2 cancellation).
ZT_HD void layernorm_row_stats(const float* x, int C, float& mean, float& rstd) {
  mean = lane_sum(x, C) / static_cast<float>(C);
  const float var = lane_sum_sq_dev(x, mean, C) / static_cast<float>(C);
  rstd = layernorm_rstd(var);
}

// The normalised value; backward recomputes it from the saved mean and rstd.
ZT_HD float layernorm_xhat(float x, float mean, float rstd) {
  return (x - mean) * rstd;
}

ZT_HD float layernorm_apply(float x, float mean, float rstd, float w, float b) {
  return (x - mean) * rstd * w + b;
}

// Backward for one element, given the row means of g = dout * w and of g * xhat:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
ZT_HD float layernorm_dx(float g, float xhat, float mean_g, float mean_g_xhat, float rstd) {
  return rstd * (g - mean_g - xhat * mean_g_xhat);
}

}  // namespace zt
