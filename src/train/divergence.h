#pragma once
// DivergenceCheck: whether a step diverged, from the numbers every rank holds alike after it (the
// loss mean and the global gradient norm are reduced over the world), so every rank decides the
// same. A loss or gradient norm that is not finite diverged (in fp16 a non-finite gradient norm is
// an overflow, the loss scaler's to skip and, when it keeps happening, to stop on); with
// --loss-spike-factor k, so does a finite loss above k times the mean of the previous
// kSpikeWindow losses, once kSpikeMinimum are known. docs/design/failure-handling.md has the rest
// (who is named, rewinding).
#include <deque>
#include <string>

#include "src/config/options.h"
#include "src/core/dtype.h"
#include "src/train/metrics.h"

namespace zt {

class DivergenceCheck {
 public:
  static constexpr size_t kSpikeWindow = 100, kSpikeMinimum = 20;
  DivergenceCheck(const TrainOptions& o, DType working);
  // After step `m`: what diverged ("the loss is nan and the gradient norm inf"), or empty. Records
  // a finite loss that did not spike for the spike mean.
  std::string cause(const StepMetrics& m);
  // After a rewind: the losses before it no longer lead to the present.
  void reset();

 private:
  bool check_nan_, fp16_;
  double spike_factor_;
  std::deque<double> recent_;
  double recent_sum_ = 0;
};

}  // namespace zt
