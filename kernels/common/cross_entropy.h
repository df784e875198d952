#pragma once
// Softmax cross-entropy for one row of logits whose first v_real columns are real; padded
// columns get probability 0 and gradient 0. The row is overwritten with
// dlogits = (softmax - onehot(target)) * dloss; the loss -log p[target] is returned.
#include <cmath>

#include "kernels/common/math.h"
#include "kernels/common/reduce.h"
#include "src/core/hd.h"

namespace zt {

ZT_HD float softmax_cross_entropy_row(float* row, int V, int v_real, int target, float dloss) {
  const float mx = lane_max(row, v_real);
  const float z = row[target] - mx;
  for (int j = 0; j < v_real; ++j) row[j] = exp_f32(row[j] - mx);
  const float sum = lane_sum(row, v_real);
  const float scale = dloss / sum;
  for (int j = 0; j < v_real; ++j) row[j] *= scale;
  for (int j = v_real; j < V; ++j) row[j] = 0.0f;
  row[target] -= dloss;
  return std::log(sum) - z;
}

}  // namespace zt
