#pragma once
// What the trainer-level tests read from a run's per-step metrics.
#include <cstddef>
#include <vector>

#include "src/core/memory_pool.h"
#include "src/train/metrics.h"

namespace zt::test {

// The step's peak bytes of one memory category.
inline size_t peak_bytes(const StepMetrics& m, MemCategory c) {
  return m.memory_peak[static_cast<size_t>(c)];
}

// The lm loss of every step, in order.
inline std::vector<double> lm_losses(const std::vector<StepMetrics>& steps) {
  std::vector<double> l;
  for (const auto& s : steps) l.push_back(s.lm_loss);
  return l;
}

}  // namespace zt::test
