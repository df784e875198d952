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

// Where a block of query rows and a block of keys sit in one sample's whole sequence, and how
// they are laid out: attention_forward is one block (every query row against every key of the
// sequence, both starting at position 0); a ring step of context parallelism is a block of one
// chunk's query rows against another chunk's keys (attention_block_forward). The causal mask is
// by position: key j is visible to query row i when k_pos + j <= q_pos + i. Dropout counters are
// those of the whole sequence's [seq, seq] probabilities, so a block draws the masks the whole
// sequence draws for its elements.
struct AttentionBlock {
  int Tq = 0, Tk = 0;        // query rows and keys
  int q_pos = 0, k_pos = 0;  // positions of query row 0 and key 0
  int seq = 0;               // the whole sequence's length
  int64_t ldq = 0;           // row stride of the queries (elements)
  int64_t ldkv = 0;          // row stride of the keys and of the values
  int64_t ld_lse = 0;        // stride between heads in lse and delta (a head's Tq rows consecutive)

  // The whole sequence of T rows of [q | k | v] with row stride ld.
  static AttentionBlock whole(int T, int64_t ld) { return {T, T, 0, 0, T, ld, ld, T}; }
  // Whether the block lies inside its sequence and its strides hold rows of C query and Ckv key
  // (and value) elements.
  ZT_HD bool valid(int64_t C, int64_t Ckv) const {
    return Tq > 0 && Tk > 0 && q_pos >= 0 && k_pos >= 0 && q_pos + Tq <= seq && k_pos + Tk <= seq &&
           ld_lse >= Tq && ldq >= C && ldkv >= Ckv;
  }
  // How many of the nk keys from key j0 query row i sees (0 .. nk).
  ZT_HD int live(int i, int j0, int nk) const {
    const int n = q_pos + i - (k_pos + j0) + 1;
    return n < 0 ? 0 : (n > nk ? nk : n);
  }
  // The keys query rows [0, rows) see between them: 0 .. keys() - 1.
  ZT_HD int keys(int rows) const {
    const int n = q_pos + rows - k_pos;
    return n < 0 ? 0 : (n > Tk ? Tk : n);
  }
  // The first query row that sees key j (Tq when none does).
  ZT_HD int first_row(int j) const {
    const int i = k_pos + j - q_pos;
    return i < 0 ? 0 : (i > Tq ? Tq : i);
  }
  // The dropout counter of element (bh, i, j) (attention_counter at the whole sequence's places).
  ZT_HD uint64_t counter(int64_t bh, int i, int j) const {
    return attention_counter(bh, seq, q_pos + i, k_pos + j);
  }
};

// The tiled kernels' operands: sample 0's queries, keys and values (key/value head 0), rows
// strided as their AttentionBlock says, samples batch_q and batch_kv elements apart.
template <typename T>
struct AttentionOperands {
  const T *q, *k, *v;
  int64_t batch_q, batch_kv;
};

// Where the tiled backward puts its gradients (rows ldq and ldkv apart, samples batch_q and
// batch_kv): stored into dqkv in T, or (attention_block_backward) added to fp32 buffers.
template <typename G>
struct AttentionGrads {
  G *q, *k, *v;
  int64_t ldq, ldkv, batch_q, batch_kv;
  bool add;
};

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

// Merging a block's attention of a query row into the running result of the blocks before it
// (their output and log-sum-exp): the output is the two outputs weighted by their shares of the
// combined normaliser, exp(lse - lse_new). A side with no visible key (lse = -inf) weighs 0.
struct AttentionMerge {
  float keep;  // weight of the running output
  float take;  // weight of the block's output
};
ZT_HD AttentionMerge attention_merge(float& lse_running, float lse_block) {
  if (lse_block == kMaskedScore) return {1.0f, 0.0f};
  if (lse_running == kMaskedScore) {
    lse_running = lse_block;
    return {0.0f, 1.0f};
  }
  const float m = lse_running > lse_block ? lse_running : lse_block;
  const float a = exp_f32(lse_running - m), b = exp_f32(lse_block - m), sum = a + b;
  lse_running = m + logf(sum);
  return {a / sum, b / sum};
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
