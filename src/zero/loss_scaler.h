#pragma once
// Loss scaling for fp16 (Megatron's DynamicGradScaler semantics): the loss is multiplied by
// `scale` before backward; a step whose gradients overflow is skipped, and after `hysteresis`
// overflows the scale halves (not below min_scale); after `window` clean steps it doubles.
// bf16 and fp32 use a constant scale of 1.
#include <cstdint>

namespace zt {

struct LossScalerConfig {
  bool dynamic = false;
  double scale = 1.0;  // the fixed scale, or the initial one when dynamic
  int window = 1000;
  int hysteresis = 2;
  double min_scale = 1.0;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerConfig& c)
      : config_(c), scale_(c.scale), hysteresis_left_(c.hysteresis) {}
  double scale() const { return scale_; }
  // Records the outcome of one optimizer step.
  void update(bool overflow);

  struct State {
    double scale;
    int growth_tracker;
    int hysteresis_left;
  };
  State state() const { return {scale_, growth_tracker_, hysteresis_left_}; }
  void restore(const State& s);

 private:
  LossScalerConfig config_;
  double scale_;
  int growth_tracker_ = 0;
  int hysteresis_left_;
};

}  // namespace zt
