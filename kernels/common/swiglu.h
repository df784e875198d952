#pragma once
// SwiGLU (Megatron-LM's --swiglu, HF Llama's act_fn(gate_proj(x)) * up_proj(x) with silu):
// the MLP's first product gives a row [gate | up] of 2F values, and y = silu(gate) * up, with
// silu(g) = g * sigmoid(g) = g / (1 + exp(-g)) (torch's silu).
#include "kernels/common/math.h"
#include "src/core/hd.h"

namespace zt {

ZT_HD float swiglu_sigmoid(float g) {
  return 1.0f / (1.0f + exp_f32(-g));
}

ZT_HD float swiglu_apply(float g, float u) {
  return g * swiglu_sigmoid(g) * u;
}

// The gradients of gate and up from dy: d silu / dg = s (1 + g (1 - s)), s = sigmoid(g).
ZT_HD void swiglu_grad(float g, float u, float dy, float& dg, float& du) {
  const float s = swiglu_sigmoid(g);
  dg = dy * u * (s * (1.0f + g * (1.0f - s)));
  du = dy * g * s;
}

}  // namespace zt
