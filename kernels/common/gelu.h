#pragma once
// GeLU with the tanh approximation (GPT-2, Megatron's "gelu", torch approximate='tanh'):
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3).
// Computed through the identity 0.5 (1 + tanh(u)) = sigmoid(2u) = 1 / (1 + exp(-2u)), which
// needs one exp_f32 (vectorisable) instead of tanh and has no cancellation for large |x|.
#include "kernels/common/math.h"
#include "src/core/hd.h"

namespace zt {

inline constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;  // sqrt(2/pi)
inline constexpr float kGeluCubic = 0.044715f;

// sigmoid(2u) = 0.5 (1 + tanh(u)).
ZT_HD float gelu_tanh_gate(float x) {
  const float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return 1.0f / (1.0f + exp_f32(-2.0f * u));
}

ZT_HD float gelu_tanh(float x) {
  return x * gelu_tanh_gate(x);
}

// d gelu / dx = s + x * 2 s (1 - s) * du/dx, s = sigmoid(2u), since d/du 0.5 (1 + tanh u) =
// 0.5 sech^2 u = 2 s (1 - s).
ZT_HD float gelu_tanh_grad(float x) {
  const float s = gelu_tanh_gate(x);
  const float du = kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return s + x * (2.0f * s * (1.0f - s)) * du;
}

}  // namespace zt
