#pragma once
// Stage 0: every rank keeps all model states. Gradients are summed over the data-parallel group
// in constant-size buckets started during backward (DpGradSync).
#include <array>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/scalar_reducer.h"
#include "src/core/memory_pool.h"
#include "src/zero/grad_staging.h"
#include "src/zero/model_states.h"

namespace zt {

class ReplicatedStates final : public ModelStates {
 public:
  ReplicatedStates(const ParamLayout& layout, DType working, const AdamConfig& adam,
                   const DeviceContext& ctx, uint64_t seed, const ZeroConfig& zero);

  int64_t max_span() const override { return zero_.reduce_bucket_elems; }
  CRef acquire(const Span& s) override;
  void release(const Span& s) override;
  float* open_grads(const Span& s) override;
  void close_grads(const Span& s) override;

  void zero_grad() override;
  void begin_microbatch(bool last) override;
  StepResult step(double lr, double loss_scale) override;
  GradSyncTiming grad_sync_timing() const override;
  void gather_master(float* full) override;
  void set_master(const float* full) override;
  int64_t adam_step() const override { return adam_step_; }
  std::vector<Tensor> owned_state() override;
  bool state_replicated_over_dp() const override { return true; }
  void after_load(int64_t adam_step) override;
  void set_state_from_layout_order(const float* master, const float* m, const float* v) override;

  Tensor working_params() const { return params_.view({layout_.numel()}, working_); }
  Tensor working_grads() const { return grads_.view({layout_.numel()}, working_); }
  Tensor master_params() const;
  void sync_working_from_master();

 private:
  bool half() const { return working_ != DType::F32; }

  ParamLayout layout_;
  DType working_;
  AdamConfig adam_;
  ZeroConfig zero_;
  Backend& be_;
  Buffer params_;  // working precision
  Buffer grads_;   // working precision
  Buffer master_;  // fp32, only when working precision is half
  Buffer m_, v_;
  int64_t begin(const Span& s) const {
    return layout_.blocks()[static_cast<size_t>(s.block)].begin + s.offset;
  }
  // Half precision only: the fp32 spans the model adds its gradients into.
  GradStaging staging_;
  std::vector<int64_t> pending_;  // per block: gradient elements not yet closed this backward
  Buffer chunk_;                  // fp32 staging for the optimizer step, constant size
  std::unique_ptr<DpGradSync> sync_;
  std::unique_ptr<comm::ScalarReducer> norm_;
  int64_t adam_step_ = 0;
};

// init_parameters into `dst` (the whole layout, fp32, in the backend's memory), through a host
// chunk when the host cannot write the device directly.
void init_parameters_on(const DeviceContext& ctx, const ParamLayout& layout, uint64_t seed,
                        float* dst);

// Σ over the world group of each rank's share of the squared gradient norm (exact, rank order).
// Without a world group of several ranks: the local value.
double global_sum(comm::ScalarReducer* reducer, double local);

// The shared tail of every stage's step: unscale, clip coefficient, AdamW parameters.
struct AdamStep {
  double grad_norm = 0;
  bool finite = true;
  cpu::AdamWParams params;
};
AdamStep prepare_adam_step(const AdamConfig& adam, double sumsq, double lr, double loss_scale,
                           int64_t step);

}  // namespace zt
