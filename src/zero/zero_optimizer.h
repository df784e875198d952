#pragma once
// ZeroOptimizer: the trainer's handle on the model states under a ZeRO stage (ZeroStates: a
// parameter store, a gradient reducer and the sharded optimizer chosen by the stage). It is the
// model's ParamSource: the model does not change per stage.
#include <memory>

#include "src/core/memory_pool.h"
#include "src/zero/model_states.h"
#include "src/zero/zero_states.h"

namespace zt {

class ZeroOptimizer final : public ParamSource {
 public:
  // Model states in ctx.pool(), updated on ctx.backend().
  ZeroOptimizer(const ParamLayout& layout, DType working, const AdamConfig& adam,
                const DeviceContext& ctx, uint64_t seed, const ZeroConfig& zero = {});
  ~ZeroOptimizer() override;

  int64_t max_span() const override { return states_->max_span(); }
  CRef acquire(const Span& s) override { return states_->acquire(s); }
  void release(const Span& s) override { states_->release(s); }
  float* open_grads(const Span& s) override { return states_->open_grads(s); }
  void close_grads(const Span& s) override { states_->close_grads(s); }

  void zero_grad() { states_->zero_grad(); }
  // Before each micro-batch's forward/backward (stages 0–1 reduce only during the last).
  void begin_microbatch(bool last) { states_->begin_microbatch(last); }
  void tie_grads() { states_->tie_grads(); }
  StepResult step(double lr, double loss_scale) { return states_->step(lr, loss_scale); }
  GradSyncTiming grad_sync_timing() const { return states_->grad_sync_timing(); }
  // `full`: host memory.
  void gather_master(float* full) { states_->gather_master(full); }
  void set_master(const float* full) { states_->set_master(full); }
  int64_t adam_step() const { return states_->adam_step(); }
  std::vector<Tensor> owned_state() { return states_->owned_state(); }
  bool state_replicated_over_dp() const { return states_->state_replicated_over_dp(); }
  void after_load(int64_t adam_step) { states_->after_load(adam_step); }
  void set_state_from_layout_order(const float* master, const float* m, const float* v) {
    states_->set_state_from_layout_order(master, m, v);
  }

  int stage() const { return zero_.stage; }
  const ParamLayout& layout() const { return layout_; }
  DType working_dtype() const { return working_; }
  ZeroStates& states() { return *states_; }
  // What this rank owns of the master parameters and moments (owned_state's order).
  const Shard& shard() const { return states_->shard(); }
  // Stage 0 only: the resident full tensors.
  Tensor working_params() { return states_->working_params(); }
  Tensor working_grads() { return states_->working_grads(); }
  Tensor master_params() { return states_->master_params(); }
  void sync_working_from_master() { states_->sync_working_from_master(); }

 private:
  ParamLayout layout_;
  DType working_;
  ZeroConfig zero_;
  std::unique_ptr<ZeroStates> states_;
};

}  // namespace zt
