#pragma once
// ZeRO stages 1–3 over a Partition of the rank's parameters:
//   stage 1 (Pos)     full working params and grads; fp32 master + Adam only for the own shard;
//                     gradients reduce-scattered to the owners, updated params all-gathered.
//   stage 2 (Pos+g)   as 1, but no full gradient: each unit's gradient is reduce-scattered as
//                     soon as backward has closed all of its spans, keeping only the own shard.
//   stage 3 (Pos+g+p) as 2, and only the own parameter shard is resident: a unit is
//                     all-gathered when the model acquires a span in it (the next one
//                     prefetched), and dropped once released and another unit is acquired.
// Every buffer is sized by the partition unit (the reduce bucket), never by a block.
#include <array>
#include <chrono>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/scalar_reducer.h"
#include "src/core/memory_pool.h"
#include "src/zero/grad_staging.h"
#include "src/zero/model_states.h"
#include "src/zero/partition.h"

namespace zt {

class PartitionedStates final : public ModelStates {
 public:
  // Unit gradients staged or in flight at once: the one backward is filling, the one it may have
  // opened beside it (a layernorm's two vectors can end one unit and begin the next), and one
  // reducing behind them. Stage 1's in-place reduce-scatters are capped at the same number.
  static constexpr int kReductions = 3;
  // Stage-3 gathered units besides the persistent ones: the model holds at most two spans at
  // once (a weight and its bias, a layernorm's two vectors), plus the one prefetched.
  static constexpr int kGatherSlots = 3;

  PartitionedStates(const ParamLayout& layout, DType working, const AdamConfig& adam,
                    const DeviceContext& ctx, uint64_t seed, const ZeroConfig& zero);
  ~PartitionedStates() override;

  int64_t max_span() const override { return zero_.reduce_bucket_elems; }
  CRef acquire(const Span& s) override;
  void release(const Span& s) override;
  float* open_grads(const Span& s) override;
  void close_grads(const Span& s) override;

  void zero_grad() override;
  void begin_microbatch(bool last) override;
  StepResult step(double lr, double loss_scale) override;
  GradSyncTiming grad_sync_timing() const override { return timing_; }
  void gather_master(float* full) override;
  void set_master(const float* full) override;
  int64_t adam_step() const override { return adam_step_; }
  std::vector<Tensor> owned_state() override;
  bool state_replicated_over_dp() const override { return false; }
  void after_load(int64_t adam_step) override;
  void set_state_from_layout_order(const float* master, const float* m, const float* v) override;
  const Partition& partition() const { return part_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Gathered {  // stage 3: one unit's parameters in working precision
    Buffer buffer;
    int unit = -1;
    int held = 0;             // spans of the unit the model holds
    bool prefetched = false;  // gathered ahead of its acquire
    int reserved = -1;        // persistent slots: the one unit they hold all step
    comm::Handle pending;
  };
  enum class Fill : uint8_t { Free, Filling, InFlight };
  struct Reduction {       // one unit's gradient: staged, then its reduce-scatter
    Buffer input, output;  // stages 2-3: staging in working precision
    comm::Handle handle;
    int unit = -1;
    Fill state = Fill::Free;
    uint64_t order = 0;
    Clock::time_point launched;
  };

  bool half() const { return working_ != DType::F32; }
  int64_t layout_offset(const Span& s) const {
    return layout_.blocks()[static_cast<size_t>(s.block)].begin + s.offset;
  }
  const PartitionUnit& unit(int u) const { return part_.units()[static_cast<size_t>(u)]; }
  Tensor typed(const Buffer& b, int64_t offset, int64_t n, DType t) const;
  // Stage 3.
  Gathered* find_gathered(int unit);
  Gathered& start_gather(int unit);
  void prefetch_after(int unit);
  // Gradient reduction.
  Reduction& filling(int unit);  // stages 2-3
  void launch(Reduction& r);
  void complete(Reduction& r);
  void launch_stage1(int unit);
  void finish_reductions();
  void all_gather_updated_params();  // stages 1–2
  // The own gradient of a shard segment (stage 1 keeps it in place in the full gradient).
  const void* shard_grad(const ShardSegment& s) const;

  ParamLayout layout_;
  DType working_;
  AdamConfig adam_;
  ZeroConfig zero_;
  DeviceContext ctx_;
  Backend& be_;
  comm::Communicator& dp_;
  Partition part_;
  Buffer full_params_;   // stages 1–2: padded space, working precision
  Buffer full_grads_;    // stage 1: padded space, working precision
  Buffer shard_params_;  // stage 3: own shard, working precision
  Buffer shard_grads_;   // stages 2–3: own shard, working precision (stage 1: in full_grads_)
  Buffer master_, m_, v_;
  Buffer f32_chunk_;                   // fp32 staging for accumulation and the optimizer step
  GradStaging staging_;                // fp32 gradient spans
  std::vector<int64_t> unit_pending_;  // per unit: gradient elements not yet closed
  std::vector<int> unit_fill_;         // per unit: its Reduction while filling, else -1
  std::vector<Gathered> gathered_;
  std::vector<Reduction> reductions_;
  uint64_t launches_ = 0;
  std::vector<comm::Handle> stage1_handles_;
  std::vector<char> stage1_launched_;
  std::vector<Clock::time_point> stage1_times_;
  std::vector<int> stage1_order_;  // units launched, oldest first (in-flight cap)
  size_t stage1_waited_ = 0;
  std::vector<int> trace_;  // stage 3: the units acquired in one step, in order, for prefetching
  size_t trace_pos_ = 0;
  bool trace_valid_ = false, recording_ = true;
  bool last_microbatch_ = true;
  std::unique_ptr<comm::ScalarReducer> norm_;
  GradSyncTiming timing_;
  double comm_ms_ = 0, hidden_ms_ = 0;
  int64_t adam_step_ = 0;
};

}  // namespace zt
