#pragma once
// RMSNorm over one row of C channels (Megatron-LM's --normalization RMSNorm, HF's LlamaRMSNorm):
// rstd = 1 / sqrt(mean(x^2) + eps), xhat = x * rstd, out = xhat * w. No mean, no bias. The fp32
// result is rounded once into the working precision (the fused kernels of Megatron/Apex; HF
// rounds xhat to the input dtype before the weight multiplies, a second rounding in half).
#include <cmath>

#include "kernels/common/reduce.h"
#include "src/core/hd.h"

namespace zt {

// 1 / sqrt(mean(x^2) + eps) from the row's sum of squares.
ZT_HD float rmsnorm_rstd(float sum_sq, int C, float eps) {
  return 1.0f / std::sqrt(sum_sq / static_cast<float>(C) + eps);
}

// The same of one widened row, summed in the fixed lanes of kernels/common/reduce.h.
ZT_HD float rmsnorm_row_rstd(const float* x, int C, float eps) {
  return rmsnorm_rstd(lane_sum_sq_dev(x, 0.0f, C), C, eps);
}

ZT_HD float rmsnorm_apply(float x, float rstd, float w) {
  return x * rstd * w;
}

// Backward for one element, g = dout * w and the row mean of g * xhat:
//   dx = rstd * (g - xhat * mean(g * xhat)).
ZT_HD float rmsnorm_dx(float g, float xhat, float mean_g_xhat, float rstd) {
  return rstd * (g - xhat * mean_g_xhat);
}

}  // namespace zt
