#pragma once
// Rotary position embeddings (RoFormer; Megatron-LM's --position-embedding-type rope, HF Llama's
// apply_rotary_pos_emb), rotary percent 1.0, in the non-interleaved "rotate_half" convention:
// a head vector x of d channels is two halves, and pair (x[i], x[i + d/2]), i < d/2, is rotated
// by the angle pos · base^(-2i/d), pos the token's position counted from its sample's start:
//   y[i] = x[i] cos - x[i + d/2] sin,   y[i + d/2] = x[i + d/2] cos + x[i] sin.
// The backward is the rotation by -angle (the transpose). The inverse frequencies
// inv_freq[i] = 1 / base^(2i/d) are computed once on the host in double precision and rounded to
// fp32 (RopeFreqs), so both backends rotate by the same angles, angle = float(pos) · inv_freq[i]
// in fp32 as in HF's LlamaRotaryEmbedding; the backends differ only in cosf/sinf and the
// rotation's own rounding.
#include <cmath>
#include <cstdint>

#include "src/core/hd.h"

namespace zt {

// The inverse frequencies of a head of `pairs` = head_dim/2 channel pairs, passed by value to the
// kernels (a kernel parameter on CUDA: no device buffer).
struct RopeFreqs {
  static constexpr int kMaxPairs = 256;  // head dimensions up to 512
  int pairs = 0;
  float inv[kMaxPairs] = {};
};

// Longer contexts than a model was trained for (Hugging Face's rope_scaling): `Linear` divides
// every inverse frequency by `factor` (positions interpolated); `Llama3` (Llama 3.1) divides the
// low frequencies, wavelength 2π/inv above original_max_positions / low_freq_factor, by `factor`,
// keeps the high ones, wavelength below original_max_positions / high_freq_factor, and blends
// the ones between by smooth = (original_max_positions / wavelength − low_freq_factor) /
// (high_freq_factor − low_freq_factor): inv · ((1 − smooth) / factor + smooth).
struct RopeScaling {
  enum class Type : uint8_t { None, Linear, Llama3 };
  Type type = Type::None;
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_positions = 8192;
  bool operator==(const RopeScaling&) const = default;
};

// One inverse frequency under `s`, in double.
inline double rope_scaled(double inv, const RopeScaling& s) {
  if (s.type == RopeScaling::Type::Linear) return inv / s.factor;
  if (s.type != RopeScaling::Type::Llama3) return inv;
  const double wavelength = 2.0 * M_PI / inv, old = s.original_max_positions;
  if (wavelength < old / s.high_freq_factor) return inv;
  if (wavelength > old / s.low_freq_factor) return inv / s.factor;
  const double smooth =
      (old / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  return (1.0 - smooth) * inv / s.factor + smooth * inv;
}

// The host's table for head dimension hd (even, at most 2 kMaxPairs: GptConfig checks), base
// `base` and scaling `s`; the kernels refuse a table of other than hd/2 pairs.
inline RopeFreqs rope_freqs(int hd, double base, const RopeScaling& s = {}) {
  RopeFreqs f;
  f.pairs = hd / 2 <= RopeFreqs::kMaxPairs ? hd / 2 : 0;
  for (int i = 0; i < f.pairs; ++i)
    f.inv[i] =
        static_cast<float>(rope_scaled(1.0 / std::pow(base, static_cast<double>(2 * i) / hd), s));
  return f;
}

// cos and sin of the angle of a pair with inverse frequency inv_freq at position pos.
ZT_HD void rope_cos_sin(int pos, float inv_freq, float& c, float& s) {
  const float a = static_cast<float>(pos) * inv_freq;
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
