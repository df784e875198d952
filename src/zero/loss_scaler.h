#pragma once
// Loss scaling for fp16 (Megatron's DynamicGradScaler semantics): the loss is multiplied by
// `scale` before backward; a step whose gradients overflow is skipped, and after `hysteresis`
// overflows the scale halves (not below min_scale); after `window` clean steps it doubles, up to
// max_scale. Megatron's DynamicGradScaler and DeepSpeed's DynamicLossScaler let it double without
// bound (a run whose gradients never overflow, say all zero, reaches infinity after ~1000 windows);
// Apex's amp caps it at 2^24. The cap's default, 2^32, is Megatron's and DeepSpeed's initial
// scale, so a run at the defaults behaves as theirs until it would grow past where they start.
// bf16 and fp32 use a constant scale of 1.
// A run whose steps keep overflowing trains nothing while looking alive, so the scaler also says
// when to stop: an overflow with the scale already at min_scale once hysteresis is spent
// (DeepSpeed's "Current loss scale already at minimum"), or max_consecutive_skips overflowing
// steps in a row (the only sign a static scale gives).
#include <cstdint>
#include <string>

#include "src/zero/model_state_defaults.h"

namespace zt {

struct LossScalerConfig {
  bool dynamic = false;
  double scale = 1.0;  // the fixed scale, or the initial one when dynamic
  int window = model_state_defaults::kLossScaleWindow;
  int hysteresis = model_state_defaults::kHysteresis;
  double min_scale = model_state_defaults::kMinLossScale;
  double max_scale = model_state_defaults::kMaxLossScale;
  int max_consecutive_skips = model_state_defaults::kMaxConsecutiveSkips;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerConfig& c)
      : config_(c), scale_(c.scale), hysteresis_left_(c.hysteresis) {}
  double scale() const { return scale_; }
  // Records the outcome of one optimizer step.
  void update(bool overflow);
  // Why training cannot go on after the last update(), as one sentence; empty while it can.
  const std::string& stuck() const { return stuck_; }

  // What a checkpoint carries, so a resumed run scales, grows and stops as an uninterrupted one.
  struct State {
    double scale;
    int growth_tracker;
    int hysteresis_left;
    int consecutive_skips;
  };
  State state() const { return {scale_, growth_tracker_, hysteresis_left_, consecutive_skips_}; }
  // A dynamic scale is brought inside this run's [min_scale, max_scale] (the flags may differ from
  // the saved run's).
  void restore(const State& s);

 private:
  LossScalerConfig config_;
  double scale_;
  int growth_tracker_ = 0;
  int hysteresis_left_;
  int consecutive_skips_ = 0;
  std::string stuck_;
};

}  // namespace zt
