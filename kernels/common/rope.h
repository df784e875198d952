#pragma once
// Rotary position embeddings (RoFormer; Megatron-LM's --position-embedding-type rope, HF Llama's
// apply_rotary_pos_emb), rotary percent 1.0, in the non-interleaved "rotate_half" convention:
// a head vector x of d channels is two halves, and pair (x[i], x[i + d/2]), i < d/2, is rotated
// by the angle pos · base^(-2i/d), pos the token's position counted from its sample's start:
//   y[i] = x[i] cos - x[i + d/2] sin,   y[i + d/2] = x[i + d/2] cos + x[i] sin.
// The backward is the rotation by -angle (the transpose). Frequencies and angles are fp32 as in
// HF's LlamaRotaryEmbedding: inv_freq = 1 / base^(2i/d), angle = float(pos) * inv_freq.
#include <cmath>

#include "src/core/hd.h"

namespace zt {

ZT_HD float rope_inv_freq(int i, int hd, float base) {
  return 1.0f / powf(base, static_cast<float>(2 * i) / static_cast<float>(hd));
}

// cos and sin of the angle of pair i at position pos.
ZT_HD void rope_cos_sin(int pos, int i, int hd, float base, float& c, float& s) {
  const float a = static_cast<float>(pos) * rope_inv_freq(i, hd, base);
  c = cosf(a);
  s = sinf(a);
}

// The pair (x0, x1) = (x[i], x[i + d/2]) rotated by the angle (sign = 1, forward) or back by it
// (sign = -1, backward).
ZT_HD void rope_rotate(float x0, float x1, float c, float s, float sign, float& y0, float& y1) {
  y0 = x0 * c - sign * x1 * s;
  y1 = x1 * c + sign * x0 * s;
}

}  // namespace zt
