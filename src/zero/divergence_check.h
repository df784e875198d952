#pragma once
// DivergenceCheck: whether a training step diverged, from the numbers every rank holds alike
// after it (the loss mean and the global gradient norm are reduced over the world), so every rank
// decides the same; beside the loss scaler, which owns fp16's overflows. A loss or gradient norm
// that is not finite diverged (in fp16 a non-finite gradient norm is an overflow, the loss scaler's
// to skip and, when it keeps happening, to stop on); with
// --loss-spike-factor k, so does a finite loss above k times the mean of the previous
// kSpikeWindow losses, once kSpikeMinimum are known. docs/design/failure-handling.md has the rest
// (who is named, rewinding).
#include <deque>
#include <string>

namespace zt {

class DivergenceCheck {
 public:
  static constexpr size_t kSpikeWindow = 100, kSpikeMinimum = 20;
  // `check_nan`: non-finite values diverge (--no-check-for-nan-in-loss-and-grad: false); `fp16`:
  // a non-finite gradient norm is an overflow; `spike_factor`: --loss-spike-factor (0: off).
  DivergenceCheck(bool check_nan, bool fp16, double spike_factor);
  // After a step of mean loss `loss` and gradient norm `grad_norm`: what diverged ("the loss is
  // NaN and the gradient norm inf"), or empty. Records a finite loss that did not spike for the
  // spike mean.
  std::string cause(double loss, double grad_norm);
  // After a rewind: the losses before it no longer lead to the present.
  void reset();

 private:
  bool check_nan_, fp16_;
  double spike_factor_;
  std::deque<double> recent_;
  double recent_sum_ = 0;
};

}  // namespace zt
