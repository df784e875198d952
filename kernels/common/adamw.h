#pragma once
// One element of AdamW (Loshchilov & Hutter; torch.optim.AdamW): decoupled weight decay and
// bias-corrected moments,
//   g' = g * grad_scale,  m = b1 m + (1 - b1) g',  v = b2 v + (1 - b2) g'^2,
//   mhat = m / (1 - b1^t),  vhat = v / (1 - b2^t),
//   p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p)      (wd uses p before this step).
#include <cmath>
#include <cstdint>

#include "src/core/hd.h"

namespace zt {

// The optimizer's settings for one step; both backends take this struct (cpu::AdamWParams and
// cuda::AdamWParams are aliases). g is scaled by grad_scale first (loss-scale unscaling and
// clipping folded in). step starts at 1.
struct AdamWParams {
  float lr = 0, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0, grad_scale = 1;
  int64_t step = 1;
};

// Per-call constants; the bias corrections are computed once (in double) by the caller.
struct AdamWConsts {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
  float inv_bc1;  // 1 / (1 - beta1^step)
  float inv_bc2;  // 1 / (1 - beta2^step)
};

// Host side: the constants of one step (bias corrections in double, then rounded once), so both
// backends feed adamw_update the same floats.
inline AdamWConsts adamw_consts(const AdamWParams& p) {
  const double t = static_cast<double>(p.step);
  return AdamWConsts{p.lr,
                     p.beta1,
                     p.beta2,
                     p.eps,
                     p.weight_decay,
                     p.grad_scale,
                     static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(p.beta1), t))),
                     static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(p.beta2), t)))};
}

ZT_HD void adamw_update(float& p, float& m, float& v, float g, const AdamWConsts& c) {
  g *= c.grad_scale;
  m = c.beta1 * m + (1.0f - c.beta1) * g;
  v = c.beta2 * v + (1.0f - c.beta2) * (g * g);
  const float mhat = m * c.inv_bc1;
  const float vhat = v * c.inv_bc2;
  p -= c.lr * (mhat / (std::sqrt(vhat) + c.eps) + c.weight_decay * p);
}

}  // namespace zt
