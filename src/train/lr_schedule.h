#pragma once
// Megatron's learning-rate schedule: linear warm-up from 0 to lr over warmup steps, then decay
// to min_lr by the decay step (constant, linear or cosine), min_lr after that.
#include <string>

namespace zt {

struct LrSchedule {
  double lr = 0;
  double min_lr = 0;
  int warmup = 0;
  int decay_iters = 0;
  std::string style = "linear";

  // Learning rate used by optimizer step `step` (1-based: the first step is 1).
  double at(int step) const;
};

}  // namespace zt
