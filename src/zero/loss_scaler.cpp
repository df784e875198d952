#include "src/zero/loss_scaler.h"

#include <algorithm>

#include <fmt/format.h>

namespace zt {

void LossScaler::update(bool overflow) {
  consecutive_skips_ = overflow ? consecutive_skips_ + 1 : 0;
  if (overflow && consecutive_skips_ >= config_.max_consecutive_skips)
    stuck_ = fmt::format(
        "fp16: {} consecutive steps skipped because the gradients overflowed (loss scale {:g}, "
        "--max-consecutive-skips {}){}",
        consecutive_skips_, scale_, config_.max_consecutive_skips,
        config_.dynamic ? "" : "; lower the static --loss-scale, or make it dynamic (0)");
  if (!config_.dynamic) return;
  if (overflow) {
    growth_tracker_ = 0;
    if (--hysteresis_left_ <= 0) {
      if (scale_ <= config_.min_scale && stuck_.empty())
        stuck_ = fmt::format(
            "fp16: the gradients overflowed with the loss scale already at its minimum ({:g}, "
            "--min-loss-scale): it cannot decrease any more",
            scale_);
      scale_ = std::max(scale_ * 0.5, config_.min_scale);
    }
    return;
  }
  if (++growth_tracker_ == config_.window) {
    growth_tracker_ = 0;
    hysteresis_left_ = config_.hysteresis;
    scale_ = std::min(scale_ * 2.0, config_.max_scale);
  }
}

void LossScaler::restore(const State& s) {
  scale_ = config_.dynamic ? std::clamp(s.scale, config_.min_scale, config_.max_scale) : s.scale;
  growth_tracker_ = s.growth_tracker;
  hysteresis_left_ = s.hysteresis_left;
  consecutive_skips_ = s.consecutive_skips;
}

}  // namespace zt
