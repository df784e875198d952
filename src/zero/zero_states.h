#pragma once
// ZeroStates: the model states of one ZeRO stage, composed of three parts chosen by the stage:
//
//   stage  ParamStore       GradReducer            ShardedAdam over
//   0      ResidentParams   AllReduceGrads         the whole layout
//   1      PaddedParams     ReduceScatterAtStep    the rank's partition shard
//   2      PaddedParams     ReduceScatterUnits     the rank's partition shard
//   3      GatheredParams   ReduceScatterUnits     the rank's partition shard
//
// (the paper's Pos, Pos+g, Pos+g+p). It serves the model as its ParamSource; the parts never
// name a layer, and this class never branches on the stage outside its constructor.
#include <memory>
#include <optional>

#include "kernels/backend.h"
#include "src/comm/scalar_reducer.h"
#include "src/core/memory_pool.h"
#include "src/zero/grad_reducer.h"
#include "src/zero/model_states.h"
#include "src/zero/param_store.h"
#include "src/zero/partition.h"
#include "src/zero/sharded_adam.h"

namespace zt {

class ZeroStates final : public ModelStates {
 public:
  ZeroStates(const ParamLayout& layout, DType working, const AdamConfig& adam,
             const DeviceContext& ctx, uint64_t seed, const ZeroConfig& zero);
  ~ZeroStates() override;

  int64_t max_span() const override { return zero_.reduce_bucket_elems; }
  CRef acquire(const Span& s) override { return store_->acquire(s); }
  void release(const Span& s) override { store_->release(s); }
  float* open_grads(const Span& s) override { return grads_->open(s); }
  void close_grads(const Span& s) override { grads_->close(s); }

  void zero_grad() override;
  void begin_microbatch(bool last) override { grads_->begin_microbatch(last); }
  void tie_grads() override;
  StepResult step(double lr, double loss_scale) override;
  GradSyncTiming grad_sync_timing() const override { return grads_->timing(); }
  void gather_master(float* full) override;
  void set_master(const float* full) override;
  int64_t adam_step() const override { return adam_->steps(); }
  std::vector<Tensor> owned_state() override { return adam_->state(); }
  bool state_replicated_over_dp() const override { return !part_.has_value(); }
  void after_load(int64_t adam_step) override;
  void set_state_from_layout_order(const float* master, const float* m, const float* v) override;

  const Shard& shard() const { return adam_->shard(); }
  // Stage 0 only: the resident full tensors.
  Tensor working_params() const;
  Tensor working_grads() const;
  Tensor master_params() const;
  void sync_working_from_master() { store_->from_master(adam_->master()); }

 private:
  ParamLayout layout_;
  DType working_;
  ZeroConfig zero_;
  DeviceContext ctx_;
  Backend& be_;
  comm::Communicator* dp_;
  std::optional<Partition> part_;  // stages 1-3
  Buffer chunk_;                   // fp32 workspace (stages 1-3): unit parts, initialisation
  std::unique_ptr<ParamStore> store_;
  std::unique_ptr<GradReducer> grads_;
  std::unique_ptr<ShardedAdam> adam_;
  std::unique_ptr<comm::ScalarReducer> norm_;
  std::vector<char> norm_excluded_;  // by parameter: a tied copy, counted on another stage
};

}  // namespace zt
