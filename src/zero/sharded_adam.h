#pragma once
// ShardedAdam: the fp32 master parameters and Adam moments of a rank's Shard, and the AdamW step
// over them from a GradReducer's summed gradient — the one optimizer of every ZeRO stage (stage 0's
// shard is the whole layout).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/scalar_reducer.h"
#include "src/core/memory_pool.h"
#include "src/zero/grad_reducer.h"
#include "src/zero/model_state_defaults.h"
#include "src/zero/optimizer_states.h"
#include "src/zero/shard.h"

namespace zt {

struct AdamConfig {
  double beta1 = model_state_defaults::kAdamBeta1;
  double beta2 = model_state_defaults::kAdamBeta2;
  double eps = model_state_defaults::kAdamEps;
  double weight_decay = 0.0;
  double clip_grad = 0.0;  // global L2 norm bound; 0 disables clipping
};

struct StepResult {
  double grad_norm = 0;  // before clipping, after unscaling
  bool skipped = false;  // non-finite gradients somewhere: no parameter changed on any rank
};

// Elements [offset, offset + len) of the shard's updated master parameters (for the parameter
// store to take its working copy from): in the backend's memory, or, where `on_host`, in host
// memory (states offloaded from a device of its own: the receiver rounds them on the host, so
// only the working precision crosses to the device).
using MasterChunkFn =
    std::function<void(int64_t offset, int64_t len, const float* master, bool on_host)>;
// Runs an offloaded step's update (the streamed AdamW) where the caller chooses: on a thread of
// its own behind the next forward. The update reads the gradients and writes the states until it
// ends.
using UpdateRunner = std::function<void(std::function<void()> update)>;

class ShardedAdam {
 public:
  // `master`: fp32 storage the caller already has for it (stage 0 in fp32: the working
  // parameters, on the device tier only), or null to allocate it. `tier`: where the states live.
  ShardedAdam(const ParamLayout& layout, Shard shard, const AdamConfig& adam,
              const DeviceContext& ctx, float* master, const StateTierConfig& tier = {});
  ~ShardedAdam();
  // The master parameters resident in the backend's memory (device tier); null on the others.
  float* master() const { return states_->resident(OptimizerStates::kMaster); }
  OptimizerStates& states() const { return *states_; }
  const Shard& shard() const { return shard_; }
  // Unscales by loss_scale, clips to the global norm (Σ over world of each rank's share:
  // parameters replicated over tp on tp rank 0 only, none of those flagged in `norm_excluded`,
  // by parameter index — the caller flags a data-parallel replica counted elsewhere) and
  // applies one AdamW step at lr. On the device: one multi-tensor norm, one read of it, one
  // multi-tensor AdamW over every segment (kernels/ops.inc sum_squares_multi, adamw_multi); with
  // offloaded states, the same AdamW on the host, chunk by chunk. `updated` gets the new master
  // parameters, chunk by chunk in shard order (unless the step is skipped). With offloaded
  // states and `run` given, the update goes to `run` once the norm and the skip decision are
  // made, and `updated` is called from there.
  StepResult step(const GradReducer& grads, DType working, double lr, double loss_scale,
                  int tp_rank, comm::ScalarReducer* norm, const std::vector<char>& norm_excluded,
                  const MasterChunkFn& updated, const UpdateRunner& run = {});
  // The master parameters, chunk by chunk in shard order, as `updated` receives them.
  void visit_master(const MasterChunkFn& fn);
  // Offloaded states: the master parameters from the seed, chunk by chunk as the tier streams
  // them (the values init_parameters gives: a pure function of each element's index).
  void init_master(uint64_t seed);
  int64_t steps() const { return steps_; }
  // This rank's share of the squared gradient norm in the last step: inf or NaN when its shard of
  // the gradient held a non-finite value (the ranks that saw a divergence first).
  double local_grad_sumsq() const { return local_sumsq_; }
  // The first parameter (layout index) of the shard whose gradient from the last step holds an
  // inf or NaN, or -1: one check per segment, for the report of a divergence, not every step.
  int first_nonfinite_grad(const GradReducer& grads, DType grad_dtype) const;
  // Every fp32 master parameter of the shard is finite (what a checkpoint may hold).
  bool master_finite() const;
  // Device bytes of the norm's partials and result (category Buffers, constant; the planner
  // counts them).
  static size_t workspace_bytes();
  // Offloaded states where the host cannot reach the device's memory: elements of each of the
  // two host chunks a streamed chunk's gradients come through.
  static int64_t offload_stage_elems(int64_t chunk_elems, int64_t shard_numel) {
    return std::min(chunk_elems, shard_numel);
  }
  // The gradient will come through GradReducer::read_grad (the NVMe tier: not resident). Takes
  // the host buffer one shard segment's gradient is read into for the norm and the non-finite
  // check, which go segment by segment as the one-launch kernels do (category NvmeBuffers:
  // segment_buffer_bytes for the plan).
  void read_grads_by_segment(MemoryPool& host, DType grad_dtype);
  static size_t segment_buffer_bytes(const Shard& shard, DType grad_dtype);
  void set_steps(int64_t n) { steps_ = n; }
  // master, m, v in shard order (device tier; empty on the others: use states()).
  std::vector<Tensor> state() const;
  // Sets master, m and v from full copies in ParamLayout order (host).
  void set_from_layout_order(const float* master, const float* m, const float* v);

 private:
  const ParamLayout& layout_;
  Shard shard_;
  AdamConfig adam_;
  void adamw_offloaded(const GradReducer& grads, DType grad_dtype, const AdamWParams& p,
                       const MasterChunkFn& updated);
  template <typename Fn>
  void for_overlaps(const StateChunk& c, Fn&& fn) const;

  Backend& be_;
  bool staged_;  // the host cannot reach the backend's memory
  std::unique_ptr<OptimizerStates> states_;
  Buffer norm_ws_;
  Buffer host_norm_ws_;       // host (offloaded, staged): the norm of gradients kept on the host
  Buffer grad_stage_;         // host (offloaded, staged): two chunks' gradients
  Buffer segment_;            // host (gradient not resident): one segment's gradient
  std::vector<int> counted_;  // gradient not resident: the segments the norm counts
  // The multi-tensor tables (host memory: kernels/common/multi_tensor.h). The AdamW table is
  // fixed but for the gradient pointers, set at each step (offloaded states: rebuilt for each
  // streamed chunk); the norm table is rebuilt each step.
  std::vector<AdamWSegment> adam_table_;
  std::vector<NormSegment> norm_table_;
  int64_t steps_ = 0;
  double local_sumsq_ = 0;
};

// init_parameters into `dst` (the whole layout, fp32, in the backend's memory), through a host
// chunk when the host cannot write the device directly.
void init_parameters_on(const DeviceContext& ctx, const ParamLayout& layout, uint64_t seed,
                        float* dst);

}  // namespace zt
