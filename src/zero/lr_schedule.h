#pragma once
// Megatron's learning-rate schedule: warm-up from 0 to lr over warmup steps, then decay to min_lr
// by the decay step (constant, linear or cosine), min_lr after that. The warm-up is linear
// (Megatron's) or logarithmic (DeepSpeed's WarmupLR default, warmup_type log: lr x ln(step + 1) /
// ln(warmup) before step `warmup`, the warm-up counted as at least 2 steps as DeepSpeed does).
#include <string>

namespace zt {

struct LrSchedule {
  double lr = 0;
  double min_lr = 0;
  int warmup = 0;
  int decay_iters = 0;
  std::string style = "linear";
  std::string warmup_style = "linear";  // or "log"

  // Learning rate used by optimizer step `step` (1-based: the first step is 1).
  double at(int step) const;
};

}  // namespace zt
