#pragma once
// One element of AdamW (Loshchilov & Hutter; torch.optim.AdamW): decoupled weight decay and
// bias-corrected moments,
//   g' = g * grad_scale,  m = b1 m + (1 - b1) g',  v = b2 v + (1 - b2) g'^2,
//   mhat = m / (1 - b1^t),  vhat = v / (1 - b2^t),
//   p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p)      (wd uses p before this step).
#include <cmath>

#include "src/core/hd.h"

namespace zt {

// Per-call constants; the bias corrections are computed once (in double) by the caller.
struct AdamWConsts {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
  float inv_bc1;  // 1 / (1 - beta1^step)
  float inv_bc2;  // 1 / (1 - beta2^step)
};

ZT_HD void adamw_update(float& p, float& m, float& v, float g, const AdamWConsts& c) {
  g *= c.grad_scale;
  m = c.beta1 * m + (1.0f - c.beta1) * g;
  v = c.beta2 * v + (1.0f - c.beta2) * (g * g);
  const float mhat = m * c.inv_bc1;
  const float vhat = v * c.inv_bc2;
  p -= c.lr * (mhat / (std::sqrt(vhat) + c.eps) + c.weight_decay * p);
}

}  // namespace zt
