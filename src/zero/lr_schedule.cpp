#include "src/zero/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace zt {

double LrSchedule::at(int step) const {
  if (warmup > 0 && warmup_style == "log" && step < warmup)
    return lr * std::log(step + 1.0) / std::log(std::max(2.0, double{warmup * 1.0}));
  if (warmup > 0 && step <= warmup) return lr * step / warmup;
  if (style == "constant") return lr;
  if (step > decay_iters) return min_lr;
  const int span = decay_iters - warmup;
  if (span <= 0) return lr;
  const double ratio = static_cast<double>(step - warmup) / span;
  const double coeff =
      style == "cosine" ? 0.5 * (std::cos(std::numbers::pi * ratio) + 1.0) : 1.0 - ratio;
  return min_lr + coeff * (lr - min_lr);
}

}  // namespace zt
