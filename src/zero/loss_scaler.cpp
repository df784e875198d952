#include "src/zero/loss_scaler.h"

#include <algorithm>

namespace zt {

void LossScaler::update(bool overflow) {
  if (!config_.dynamic) return;
  if (overflow) {
    growth_tracker_ = 0;
    if (--hysteresis_left_ <= 0) scale_ = std::max(scale_ * 0.5, config_.min_scale);
    return;
  }
  if (++growth_tracker_ == config_.window) {
    growth_tracker_ = 0;
    hysteresis_left_ = config_.hysteresis;
    scale_ *= 2.0;
  }
}

void LossScaler::restore(const State& s) {
  scale_ = s.scale;
  growth_tracker_ = s.growth_tracker;
  hysteresis_left_ = s.hysteresis_left;
}

}  // namespace zt
