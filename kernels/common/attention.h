#pragma once
// The element math of flash-style causal attention, shared by both backends (kernels/cpu/
// attention.cpp, kernels/cuda/attention.cu). Scores are visited one key tile at a time and the
// softmax is kept "online" per query row: a running max m and a running sum l of exp(s - m).
// When a tile raises the max, everything accumulated so far (l and the output row) is scaled
// by exp(m_old - m_new). At the end out = acc / l and lse = m + log(l) is all backward needs to
// recompute any probability: P_ij = exp(s_ij - lse_i). Statistics are fp32 on both backends.
#include <cmath>
#include <cstdint>

#include "kernels/common/dropout.h"
#include "kernels/common/math.h"
#include "src/core/half.h"
#include "src/core/hd.h"

namespace zt {

// The score of a key right of the diagonal (or past the sequence): exp_f32 turns it into 0.
inline constexpr float kMaskedScore = -INFINITY;

// The dropout counter of attention element (bh, i, j), bh = b*NH + h: its flat index in the
// [B, NH, T, T] probability matrix, the counter the unfused attention used, so masks (and the
// tensor-parallel head slices of tp::head_slice) are unchanged.
ZT_HD uint64_t attention_counter(int64_t bh, int T, int i, int j) {
  return (static_cast<uint64_t>(bh) * static_cast<uint64_t>(T) + static_cast<uint64_t>(i)) *
             static_cast<uint64_t>(T) +
         static_cast<uint64_t>(j);
}

// Online-softmax state of one query row.
struct OnlineSoftmax {
  float m = kMaskedScore;  // running max of the scores seen
  float l = 0.0f;          // running sum of exp(s - m)
};

// Raises the running max to include a tile whose max score is tile_max and returns the factor
// exp(m_old - m_new) by which l and the accumulated output must be scaled. The first tile of a
// causal row always holds key 0, so m_new is finite after it; while both are -inf (a row with no
// key yet) nothing is scaled.
ZT_HD float online_softmax_raise(OnlineSoftmax& st, float tile_max) {
  const float m_new = tile_max > st.m ? tile_max : st.m;
  if (m_new == kMaskedScore) return 1.0f;
  const float alpha = exp_f32(st.m - m_new);
  st.m = m_new;
  st.l *= alpha;
  return alpha;
}

// exp(s - m): the unnormalised probability of one score under the running max (0 for a masked
// score). Forward adds it to l; backward calls it with m = lse to get P itself.
ZT_HD float online_softmax_prob(float s, float m) {
  return exp_f32(s - m);
}

// The row's log-sum-exp, kept for backward.
ZT_HD float online_softmax_lse(const OnlineSoftmax& st) {
  return st.m + logf(st.l);
}

// Backward through softmax for one element: dS = P (dP - D), where dP is the gradient of the
// (undropped) probability and D = rowsum(dO * O) = rowsum(dP * P) of the row.
ZT_HD float attention_dscore(float p, float dp, float delta) {
  return p * (dp - delta);
}

// The same through dropout: dP is the dropped probability's gradient times the mask.
ZT_HD float attention_dscore(float p, float dp_dropped, float delta, const DropoutParams& drop,
                             uint64_t counter) {
  return attention_dscore(p, dropout_apply(dp_dropped, drop, counter), delta);
}

// Generation against a key/value cache (attention_cached_forward): query row i of a step that
// appends rows at position `past` sees keys 0 .. past + i.
ZT_HD int attention_cached_keys(int past, int i) {
  return past + i + 1;
}

// The key/value head query head h of NH reads under grouped-query attention with NKV key/value
// heads (NKV divides NH): consecutive query heads share one.
ZT_HD int attention_kv_head(int h, int NH, int NKV) {
  return h / (NH / NKV);
}

// The scaled score of one query row and one key row of a head (hd elements each), fp32.
template <typename T>
ZT_HD float attention_score(const T* q, const T* k, int hd, float scale) {
  float acc = 0.0f;
  for (int e = 0; e < hd; ++e) acc += to_float(q[e]) * to_float(k[e]);
  return acc * scale;
}

}  // namespace zt
