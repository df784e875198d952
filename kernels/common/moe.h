#pragma once
// A mixture of experts' routing and its row moves (docs/design/moe.md), one token at a time, for
// both backends.
//
// Routing of a token from its router logits [E] (fp32): scores by softmax (max subtracted) or
// sigmoid; its k experts by descending score, the lower index first among equal scores (what
// torch.topk gives on distinct values); their weights are the scores, divided by their sum when
// `renormalize` (Mixtral; Qwen-MoE's norm_topk_prob).
//
// Rows move through `slots` [N, k]: token t's j-th choice is row slots[t·k + j] of the experts'
// input (-1: dropped over capacity, nothing sent and nothing added back). The caller orders the
// rows expert by expert; every kept slot is a distinct row.
#include <cstdint>

#include "kernels/common/math.h"
#include "src/core/half.h"
#include "src/core/hd.h"

namespace zt {

struct MoeRouting {
  int E = 0;  // experts
  int k = 0;  // experts per token
  bool sigmoid = false;
  bool renormalize = true;
};

ZT_HD void moe_route_row(const float* logits, float* scores, int32_t* experts, float* weights,
                         const MoeRouting& r) {
  if (r.sigmoid) {
    for (int e = 0; e < r.E; ++e) scores[e] = 1.0f / (1.0f + exp_f32(-logits[e]));
  } else {
    float m = logits[0];
    for (int e = 1; e < r.E; ++e) m = logits[e] > m ? logits[e] : m;
    float sum = 0.0f;
    for (int e = 0; e < r.E; ++e) sum += scores[e] = exp_f32(logits[e] - m);
    for (int e = 0; e < r.E; ++e) scores[e] /= sum;
  }
  float total = 0.0f;
  for (int j = 0; j < r.k; ++j) {
    int best = -1;
    for (int e = 0; e < r.E; ++e) {
      bool taken = false;
      for (int i = 0; i < j; ++i) taken = taken || experts[i] == e;
      if (!taken && (best < 0 || scores[e] > scores[best])) best = e;
    }
    experts[j] = best;
    weights[j] = scores[best];
    total += scores[best];
  }
  if (r.renormalize)
    for (int j = 0; j < r.k; ++j) weights[j] /= total;
}

// The token's logit gradient from its weights' gradient dweights [k] and, when dscores is not
// null, a gradient dscores [E] on every score (the load-balancing loss's term, the same for every
// token), through the forward's scores and experts.
ZT_HD void moe_route_row_backward(float* dlogits, const float* scores, const int32_t* experts,
                                  const float* dweights, const float* dscores,
                                  const MoeRouting& r) {
  for (int e = 0; e < r.E; ++e) dlogits[e] = dscores != nullptr ? dscores[e] : 0.0f;
  if (r.renormalize) {  // w_j = s_j / S: ds_m = dw_m / S - (sum_j dw_j s_j) / S^2
    float total = 0.0f, dot = 0.0f;
    for (int j = 0; j < r.k; ++j) {
      total += scores[experts[j]];
      dot += dweights[j] * scores[experts[j]];
    }
    for (int j = 0; j < r.k; ++j)
      dlogits[experts[j]] += dweights[j] / total - dot / (total * total);
  } else {
    for (int j = 0; j < r.k; ++j) dlogits[experts[j]] += dweights[j];
  }
  if (r.sigmoid) {
    for (int e = 0; e < r.E; ++e) dlogits[e] *= scores[e] * (1.0f - scores[e]);
  } else {
    float inner = 0.0f;
    for (int e = 0; e < r.E; ++e) inner += scores[e] * dlogits[e];
    for (int e = 0; e < r.E; ++e) dlogits[e] = scores[e] * (dlogits[e] - inner);
  }
}

// Output column c of token t: the sum over its kept slots of weight (1 without weights) times
// the slot's row, in slot order, fp32.
template <typename T>
ZT_HD float moe_combine_element(const T* rows, const int32_t* slots, const float* weights, int k,
                                int C, int c) {
  float acc = 0.0f;
  for (int j = 0; j < k; ++j) {
    if (slots[j] < 0) continue;
    const float v = to_float(rows[static_cast<int64_t>(slots[j]) * C + c]);
    acc += weights != nullptr ? weights[j] * v : v;
  }
  return acc;
}

}  // namespace zt
