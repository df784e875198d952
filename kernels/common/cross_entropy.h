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

// The vocab-parallel passes (kernels/ops.inc vocab_ce_*) on a shard of `V` columns starting at
// global column v_begin, of which the global first v_real are real.
// Real columns of the shard (a shard may be all padding).
ZT_HD int vocab_ce_real(int V, int v_begin, int v_real) {
  const int r = v_real - v_begin;
  return r < 0 ? 0 : (r > V ? V : r);
}
// The target's column in this shard, or -1 when another shard holds it.
ZT_HD int vocab_ce_local_target(int target, int V, int v_begin) {
  const int t = target - v_begin;
  return t >= 0 && t < V ? t : -1;
}
// loss = log s - z, with s = Σ exp(l - max) over the whole row and z = l[target] - max.
ZT_HD float vocab_ce_loss(float sum, float z) {
  return std::log(sum) - z;
}

}  // namespace zt
