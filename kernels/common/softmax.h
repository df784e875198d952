#pragma once
// Causal softmax rows for attention. A row i of the [T, T] score matrix has n = i + 1 valid
// entries; everything to the right of the diagonal is written as exactly 0.
#include "kernels/common/math.h"
#include "kernels/common/reduce.h"
#include "src/core/hd.h"

namespace zt {

// row[0, n) holds scores; on return row[0, n) holds probabilities and row[n, len) zeros.
// Stable: the row max is subtracted before exp.
ZT_HD void softmax_causal_row(float* row, int n, int len) {
  const float mx = lane_max(row, n);
  for (int j = 0; j < n; ++j) row[j] = exp_f32(row[j] - mx);
  const float inv = 1.0f / lane_sum(row, n);
  for (int j = 0; j < n; ++j) row[j] *= inv;
  for (int j = n; j < len; ++j) row[j] = 0.0f;
}

// One element of the softmax backward, given dot = sum_k dP_k P_k over the row.
ZT_HD float softmax_backward_elem(float dp, float p, float dot) {
  return p * (dp - dot);
}

// Softmax backward for one row: dS_j = P_j (dP_j - sum_k dP_k P_k), j < n, in place on dp.
ZT_HD void softmax_backward_row(float* dp, const float* p, int n) {
  const float dot = lane_dot(dp, p, n);
  for (int j = 0; j < n; ++j) dp[j] = softmax_backward_elem(dp[j], p[j], dot);
}

}  // namespace zt
