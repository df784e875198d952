#pragma once
// ZeroOptimizer: the model states under one ZeRO stage (working parameters, gradients, fp32
// master parameters, Adam moments), composed of three parts; each stage is one composition (the
// paper's Pos, Pos+g, Pos+g+p):
//
//   stage  ParamStore       GradReducer            ShardedAdam over
//   0      ResidentParams   AllReduceGrads         the whole layout
//          or CastParams    (half precision, ZeroConfig::cast_params)
//   1      PaddedParams     ReduceScatterAtStep    the rank's partition shard
//   2      PaddedParams     ReduceScatterUnits     the rank's partition shard
//   3      GatheredParams   ReduceScatterUnits     the rank's partition shard
//
// It is the model's ParamSource: the model does not change per stage. The stage number only
// picks the composition in the constructor; every method after that talks to the parts.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/comm/scalar_reducer.h"
#include "src/core/background_job.h"
#include "src/core/memory_pool.h"
#include "src/model/param_layout.h"
#include "src/model/param_ref.h"
#include "src/model/param_source.h"
#include "src/zero/dp_grad_sync.h"
#include "src/zero/grad_reducer.h"
#include "src/zero/model_state_defaults.h"
#include "src/zero/optimizer_states.h"
#include "src/zero/param_store.h"
#include "src/zero/partition.h"
#include "src/zero/shard.h"
#include "src/zero/sharded_adam.h"

namespace zt {

struct ZeroConfig {
  int stage = 0;
  comm::Communicator* dp = nullptr;  // the data-parallel group; null: one rank
  // The expert parameters' group (ParamSpec::expert): the ranks of dp holding the same experts
  // (edp). Their gradients are reduced and their states partitioned over it; null: dp.
  comm::Communicator* expert_dp = nullptr;
  comm::Communicator* world = nullptr;  // for the global gradient norm across dp and tp
  int tp_rank = 0;  // parameters replicated over tp count in the norm on tp rank 0 only
  // Parameters tied to another pipeline stage's copy (the word embedding of the first stage and
  // the last stage's copy for the head): tie_grads() sums their gradients over `tied`. With
  // `tied_copy` they are also left out of the global norm (the original's stage counts them).
  comm::Communicator* tied = nullptr;
  std::vector<int> tied_params;  // indices into the layout's params
  bool tied_copy = false;
  // Constant-size buckets (ZeRO-R's CB), in elements. The reduce bucket is also the longest
  // span the model reaches (ParamSource::max_span) and the partition unit, in every stage, so
  // the stages compute the same bits.
  int64_t reduce_bucket_elems = model_state_defaults::kReduceBucketElems;
  int64_t allgather_bucket_elems = model_state_defaults::kAllgatherBucketElems;
  bool overlap_comm = true;
  // Stage 3 (prefetch_policy.h).
  int64_t prefetch_bucket_elems = model_state_defaults::kPrefetchBucketElems;
  int64_t param_persistence_threshold = model_state_defaults::kParamPersistenceThreshold;
  int64_t max_live_parameters = model_state_defaults::kMaxLiveParameters;
  // Keep the gradient in fp32 under half-precision parameters (Megatron's
  // --accumulate-allreduce-grads-in-fp32): accumulation and reduction in fp32.
  bool fp32_grads = false;
  // Stage 0 under half precision: keep no working copy of the parameters; each acquire rounds
  // its span of the fp32 master into an arena of `held_params_elems` elements, the most the
  // model holds at once (Gpt::held_params_elems) — bitwise the stored copy's values.
  bool cast_params = false;
  int64_t held_params_elems = 0;
  // Where the fp32 master parameters and Adam moments live, and the optimizer step with them
  // (--offload-optimizer; optimizer_states.h).
  StateTierConfig optimizer_tier;
  // Stage 3: where the own shard of the working parameters lives (--offload-param;
  // param_shard.h); its chunk_elems is unused.
  StateTierConfig param_tier;
  // With the optimizer offloaded at stages 0-2: the streamed update runs on a thread of its own
  // behind the next forward, each acquire waiting for the chunks its span lies in (stages 1-2:
  // gathering its unit once every rank's part is in; the same bits as waiting for the whole
  // update; docs/design/offload.md).
  bool overlap_offloaded_step = true;
};

// What a composition's model states take, by where: the device's categories Params, Grads and
// Optimizer; the host's HostParams, HostGrads, HostOptimizer and NvmeBuffers; and the swap
// files' bytes by what they hold.
struct ModelStateBytes {
  size_t params = 0, grads = 0, optimizer = 0;
  size_t host_params = 0, host_grads = 0, host_optimizer = 0, nvme_buffers = 0;
  uint64_t param_file = 0, grad_file = 0, optimizer_file = 0;
  // Of the device's Buffers: stage 3's parameter parts staged there from a host or NVMe tier.
  size_t param_staging = 0;
  int64_t optimizer_elems = 0;  // what the optimizer steps: its shard, or the whole layout
};

class ZeroOptimizer final : public ParamSource {
 public:
  // Model states in ctx.pool(), updated on ctx.backend().
  ZeroOptimizer(const ParamLayout& layout, DType working, const AdamConfig& adam,
                const DeviceContext& ctx, uint64_t seed, const ZeroConfig& zero = {});
  ~ZeroOptimizer() override;
  // The fp32 workspace stages 1-3 allocate (category Buffers: unit parts, initialisation).
  static int64_t workspace_elems(const Partition& part);
  // What the stage's composition allocates for the model states on a rank of `part` (the
  // planner's figures): the parts the stage table names, each part's own sizes on its tier.
  // `needs_staging`: the backend's memory is not the host's (DeviceContext::needs_staging).
  static ModelStateBytes model_state_bytes(const ParamLayout& layout, const Partition& part,
                                           DType working, const ZeroConfig& zero,
                                           bool needs_staging);
  // The parts hold references into this object.
  ZeroOptimizer(const ZeroOptimizer&) = delete;
  ZeroOptimizer& operator=(const ZeroOptimizer&) = delete;

  int64_t max_span() const override { return zero_.reduce_bucket_elems; }
  CRef acquire(const Span& s) override { return store_->acquire(s); }
  void release(const Span& s) override { store_->release(s); }
  float* open_grads(const Span& s) override {
    settle_grads();
    return grads_->open(s);
  }
  void close_grads(const Span& s) override { grads_->close(s); }

  void zero_grad();
  // Before each micro-batch's forward/backward (stages 0–1 reduce only during the last).
  void begin_microbatch(bool last) { grads_->begin_microbatch(last); }
  // Sums the tied parameters' gradients over ZeroConfig::tied (stages 0-1, which keep the whole
  // gradient; before step(), with overlap_comm off so no data-parallel reduction has started).
  void tie_grads();
  // Unscales by loss_scale, clips to the global norm, applies one AdamW step at lr. With the
  // update behind the next forward (ZeroConfig::overlap_offloaded_step) it may still run on
  // return: every method but acquire and release waits for it first.
  StepResult step(double lr, double loss_scale);
  // Waits for the update still running, and rethrows its error (an NVMe read or write that
  // failed): the end of a run calls it so that no failure goes unreported.
  void wait_for_update() const;
  // The last step's data-parallel communication against compute: the gradient reductions and,
  // at stage 3, the parameter gathers (each hidden for the part that ran before compute needed
  // it; a gather's exposed time is the rest, which the acquire waited).
  GradSyncTiming grad_sync_timing() const;
  // Stage 3: what the parameter store measured of its gathers; null in stages 0-2.
  const GatherStats* gather_stats() const { return store_->gather_stats(); }
  comm::OverlapTiming gather_timing() const { return store_->gather_timing(); }
  // Stage 0 with cast_params: the arena and the casts measured; null otherwise.
  const CastStats* cast_stats() const { return store_->cast_stats(); }
  // The parameters' swap file's bytes (stage 3, --offload-param nvme), else 0.
  uint64_t param_file_bytes() const { return store_->swap_file_bytes(); }
  // The gradient shard's swap file's bytes (stages 2-3 with the optimizer on NVMe from a device
  // of its own), else 0.
  uint64_t grad_file_bytes() const { return grads_->swap_file_bytes(); }
  // The full fp32 master parameters in ParamLayout order into host memory, on every rank
  // (collective over dp). Host pointers here and in set_master / set_state_from_layout_order.
  void gather_master(float* full);
  // Sets the master parameters from a full fp32 copy (every rank passes the same) and
  // re-derives the working parameters.
  void set_master(const float* full);
  int64_t adam_step() const { return adam_->steps(); }
  // This rank's share of the last step's squared gradient norm (not finite: a non-finite value
  // in this rank's gradient shard).
  double local_grad_sumsq() const { return adam_->local_grad_sumsq(); }
  // The name of the first parameter whose gradient in this rank's shard is not finite after the
  // last step; empty when none is (a divergence's report).
  std::string first_nonfinite_grad() const;
  // Every fp32 master parameter this rank owns is finite.
  bool master_finite() const {
    wait_for_update();
    return adam_->master_finite();
  }

  // What a checkpoint saves for this rank: fp32 master parameters, Adam m and v — the rank's
  // shard (stages 1–3) or everything (stage 0) — in a fixed order. Working parameters are not
  // saved: they are always the master rounded to the working precision. Resident in the
  // backend's memory on the device tier (owned_state: tensors); on any tier through states().
  std::vector<Tensor> owned_state() {
    wait_for_update();
    return adam_->state();
  }
  OptimizerStates& states() const {
    wait_for_update();
    return adam_->states();
  }
  bool states_resident() const { return adam_->states().tier() == StateTier::Device; }
  // Stage 0 holds identical states on every data-parallel rank: only one needs writing.
  bool state_replicated_over_dp() const { return !part_.has_value(); }
  // After owned_state() was overwritten from a checkpoint: re-derive the working parameters
  // (collective over dp in stages 1–2) and set the Adam step counter.
  void after_load(int64_t adam_step);
  // Sets master, m and v from full copies in ParamLayout order (this rank's tensor-parallel
  // shard, the same on every dp rank) — the reshaping path, when the saved layout differs.
  void set_state_from_layout_order(const float* master, const float* m, const float* v) {
    wait_for_update();
    adam_->set_from_layout_order(master, m, v);
  }

  int stage() const { return zero_.stage; }
  const ParamLayout& layout() const { return layout_; }
  DType working_dtype() const { return working_; }
  // What this rank owns of the master parameters and moments (owned_state's order).
  const Shard& shard() const { return adam_->shard(); }
  // Stage 0 only: the resident full tensors (the working parameters: not with cast_params).
  Tensor working_params() const;
  Tensor working_grads() const;
  Tensor master_params() const;
  void sync_working_from_master() {
    wait_for_update();
    refresh_working();
  }

 private:
  // The working parameters from the master parameters wherever they live.
  void refresh_working();
  // Takes updated master chunks into the parameter store (finish_from_master completes them).
  MasterChunkFn to_store();
  // The stages 1-3 compositions: the partition, the own master shard from the seed, then the
  // parameter store and gradient reducer the stage names.
  void compose_partitioned(const AdamConfig& adam, uint64_t seed);
  void start_update_thread();
  // wait_for_update, then the zeroing zero_grad left for after it (the update reads them).
  void settle_grads();

  ParamLayout layout_;
  DType working_;
  DType grad_dtype_;  // the kept gradient's: working_, or fp32 (ZeroConfig::fp32_grads)
  ZeroConfig zero_;
  DeviceContext ctx_;
  Backend& be_;
  std::optional<Partition> part_;  // stages 1-3
  Buffer chunk_;                   // fp32 workspace (stages 1-3): unit parts, initialisation
  Buffer host_round_;  // offloaded from a device apart: updated master rounded on the host
  std::unique_ptr<ParamStore> store_;
  std::unique_ptr<GradReducer> grads_;
  std::unique_ptr<ShardedAdam> adam_;
  std::unique_ptr<comm::ScalarReducer> norm_;
  // By parameter: a tied copy, counted on another stage; or, where every rank of a group holds
  // the whole reduced gradient (stage 0), a replica on a rank other than its group's first.
  std::vector<char> norm_excluded_;
  // The offloaded update behind the next forward (stage 0), and whether one was started and not
  // yet waited for; zero_grad leaves the zeroing to settle_grads while one runs.
  std::unique_ptr<BackgroundJob> update_;
  mutable bool updating_ = false;
  bool zero_pending_ = false;
};

}  // namespace zt
