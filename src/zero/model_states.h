#pragma once
// ModelStates: one ZeRO stage's policy for the model states (working parameters, gradients,
// fp32 master parameters, Adam moments): which of them a rank keeps, and how gradients and
// parameters cross the data-parallel group. It serves the model as its ParamSource.
#include <cstdint>
#include <vector>

#include "src/comm/communicator.h"
#include "src/model/param_layout.h"
#include "src/model/param_source.h"
#include "src/zero/dp_grad_sync.h"

namespace zt {

struct AdamConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double clip_grad = 0.0;  // global L2 norm bound; 0 disables clipping
};

struct ZeroConfig {
  int stage = 0;
  comm::Communicator* dp = nullptr;     // the data-parallel group; null: one rank
  comm::Communicator* world = nullptr;  // for the global gradient norm across dp and tp
  int tp_rank = 0;  // parameters replicated over tp count in the norm on tp rank 0 only
  // Parameters tied to another pipeline stage's copy (the word embedding of the first stage and
  // the last stage's copy for the head): tie_grads() sums their gradients over `tied`. With
  // `tied_copy` they are also left out of the global norm (the original's stage counts them).
  comm::Communicator* tied = nullptr;
  std::vector<int> tied_params;  // indices into the layout's params
  bool tied_copy = false;
  // Constant-size buckets (ZeRO-R's CB), in elements; DeepSpeed's defaults. The reduce bucket
  // is also the longest span the model reaches (ParamSource::max_span) and the partition unit,
  // in every stage, so the stages compute the same bits.
  int64_t reduce_bucket_elems = 500'000'000;
  int64_t allgather_bucket_elems = 500'000'000;
  bool overlap_comm = true;
  // Stage 3.
  int64_t prefetch_bucket_elems = 50'000'000;
  int64_t param_persistence_threshold = 100'000;
  int64_t max_live_parameters = 1'000'000'000;
};

struct StepResult {
  double grad_norm = 0;  // before clipping, after unscaling
  bool skipped = false;  // non-finite gradients somewhere: no parameter changed on any rank
};

class ModelStates : public ParamSource {
 public:
  virtual void zero_grad() = 0;
  virtual void begin_microbatch(bool last) = 0;
  // Sums the tied parameters' gradients over ZeroConfig::tied (stages 0-1, which keep the whole
  // gradient; before step(), with overlap_comm off so no data-parallel reduction has started).
  virtual void tie_grads() = 0;
  // Unscales by loss_scale, clips to the global norm, applies one AdamW step at lr.
  virtual StepResult step(double lr, double loss_scale) = 0;
  virtual GradSyncTiming grad_sync_timing() const = 0;
  // The full fp32 master parameters in ParamLayout order into host memory, on every rank
  // (collective over dp). Host pointers here and in set_master / set_state_from_layout_order.
  virtual void gather_master(float* full) = 0;
  // Sets the master parameters from a full fp32 copy (every rank passes the same) and
  // re-derives the working parameters.
  virtual void set_master(const float* full) = 0;
  virtual int64_t adam_step() const = 0;

  // What a checkpoint saves for this rank: fp32 master parameters, Adam m and v — the rank's
  // shard (stages 1–3) or everything (stage 0) — in a fixed order. Working parameters are not
  // saved: they are always the master rounded to the working precision.
  virtual std::vector<Tensor> owned_state() = 0;
  // Stage 0 holds identical states on every data-parallel rank: only one needs writing.
  virtual bool state_replicated_over_dp() const = 0;
  // After owned_state() was overwritten from a checkpoint: re-derive the working parameters
  // (collective over dp in stages 1–2) and set the Adam step counter.
  virtual void after_load(int64_t adam_step) = 0;
  // Sets master, m and v from full copies in ParamLayout order (this rank's tensor-parallel
  // shard, the same on every dp rank) — the reshaping path, when the saved layout differs.
  virtual void set_state_from_layout_order(const float* master, const float* m, const float* v) = 0;
};

}  // namespace zt
