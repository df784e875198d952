#include "src/train/divergence.h"

#include <fmt/format.h>

#include <cmath>

namespace zt {
namespace {

// "NaN", "inf" or "-inf": the sign of a NaN means nothing to the reader.
std::string nonfinite(double v) {
  return std::isnan(v) ? "NaN" : fmt::format("{}", v);
}

}  // namespace

DivergenceCheck::DivergenceCheck(const TrainOptions& o, DType working)
    : check_nan_(!o.no_check_for_nan_in_loss_and_grad),
      fp16_(working == DType::F16),
      spike_factor_(o.loss_spike_factor) {}

std::string DivergenceCheck::cause(const StepMetrics& m) {
  if (check_nan_) {
    const bool loss = !std::isfinite(m.lm_loss), grad = !fp16_ && !std::isfinite(m.grad_norm);
    if (loss && grad)
      return fmt::format("the loss is {} and the gradient norm {}", nonfinite(m.lm_loss),
                         nonfinite(m.grad_norm));
    if (loss) return fmt::format("the loss is {}", nonfinite(m.lm_loss));
    if (grad) return fmt::format("the gradient norm is {}", nonfinite(m.grad_norm));
  }
  if (spike_factor_ <= 0 || !std::isfinite(m.lm_loss)) return {};
  if (recent_.size() >= kSpikeMinimum) {
    const double mean = recent_sum_ / static_cast<double>(recent_.size());
    if (m.lm_loss > spike_factor_ * mean)
      return fmt::format("the loss {:.6g} is above {:g} times the mean of the previous {} ({:.6g})",
                         m.lm_loss, spike_factor_, recent_.size(), mean);
  }
  recent_.push_back(m.lm_loss);
  recent_sum_ += m.lm_loss;
  if (recent_.size() > kSpikeWindow) {
    recent_sum_ -= recent_.front();
    recent_.pop_front();
  }
  return {};
}

void DivergenceCheck::reset() {
  recent_.clear();
  recent_sum_ = 0;
}

}  // namespace zt
