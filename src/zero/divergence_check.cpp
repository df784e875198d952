#include "src/zero/divergence_check.h"

#include <fmt/format.h>

#include <cmath>

namespace zt {
namespace {

// "NaN", "inf" or "-inf": the sign of a NaN means nothing to the reader.
std::string nonfinite(double v) {
  return std::isnan(v) ? "NaN" : fmt::format("{}", v);
}

}  // namespace

DivergenceCheck::DivergenceCheck(bool check_nan, bool fp16, double spike_factor)
    : check_nan_(check_nan), fp16_(fp16), spike_factor_(spike_factor) {}

std::string DivergenceCheck::cause(double loss, double grad_norm) {
  if (check_nan_) {
    const bool bad_loss = !std::isfinite(loss), bad_grad = !fp16_ && !std::isfinite(grad_norm);
    if (bad_loss && bad_grad)
      return fmt::format("the loss is {} and the gradient norm {}", nonfinite(loss),
                         nonfinite(grad_norm));
    if (bad_loss) return fmt::format("the loss is {}", nonfinite(loss));
    if (bad_grad) return fmt::format("the gradient norm is {}", nonfinite(grad_norm));
  }
  if (spike_factor_ <= 0 || !std::isfinite(loss)) return {};
  if (recent_.size() >= kSpikeMinimum) {
    const double mean = recent_sum_ / static_cast<double>(recent_.size());
    if (loss > spike_factor_ * mean)
      return fmt::format("the loss {:.6g} is above {:g} times the mean of the previous {} ({:.6g})",
                         loss, spike_factor_, recent_.size(), mean);
  }
  recent_.push_back(loss);
  recent_sum_ += loss;
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
