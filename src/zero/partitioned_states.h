#pragma once
// ZeRO stages 1–3 over a Partition of the rank's parameters:
//   stage 1 (Pos)     full working params and grads; fp32 master + Adam only for the own shard;
//                     gradients reduce-scattered to the owners, updated params all-gathered.
//   stage 2 (Pos+g)   as 1, but no full gradient: each block's gradient is reduce-scattered in
//                     constant-size units as backward completes it, keeping only the own shard.
//   stage 3 (Pos+g+p) as 2, and only the own parameter shard is resident: a block is
//                     all-gathered when the model acquires it (the next one prefetched), and
//                     its gathered copy is dropped when evicted.
#include <array>
#include <chrono>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/scalar_reducer.h"
#include "src/core/memory_pool.h"
#include "src/zero/grad_slots.h"
#include "src/zero/model_states.h"
#include "src/zero/partition.h"

namespace zt {

class PartitionedStates final : public ModelStates {
 public:
  PartitionedStates(const ParamLayout& layout, DType working, const AdamConfig& adam,
                    const DeviceContext& ctx, uint64_t seed, const ZeroConfig& zero);
  ~PartitionedStates() override;

  CRef acquire(int block) override;
  void release(int block) override;
  float* grads(int block) override;
  void grads_done(int block) override;

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
  struct Gathered {  // stage 3: one block's parameters in working precision
    Buffer buffer;
    int block = -1;
    bool in_use = false;
    bool persistent = false;
    int reserved = -1;  // persistent slots: the one block they hold
    uint64_t last_use = 0;
    std::vector<comm::Handle> pending;
  };
  struct Reduction {       // one unit's reduce-scatter in flight
    Buffer input, output;  // stages 2–3: staging in working precision
    comm::Handle handle;
    int unit = -1;
    Clock::time_point launched;
  };

  bool half() const { return working_ != DType::F32; }
  int64_t block_numel(int block) const {
    return layout_.blocks()[static_cast<size_t>(block)].numel();
  }
  Tensor typed(const Buffer& b, int64_t offset, int64_t n, DType t) const;
  float* grad_slot(int block) { return grad_slots_.open(block, part_.padded_block_len(block)); }
  // Stage 3.
  Gathered& gather(int block);  // starts (or finds) the gather of `block`
  Gathered* find_gathered(int block);
  void prefetch_after(int block);
  // Gradient reduction.
  void reduce_unit(int unit, const float* block_grad);  // stages 2–3
  void complete(Reduction& r);
  void launch_stage1(int block);
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
  Buffer f32_chunk_;      // fp32 staging for accumulation and the optimizer step
  GradSlots grad_slots_;  // fp32, one padded block each
  std::vector<Gathered> gathered_;
  std::vector<Reduction> reductions_;
  size_t next_reduction_ = 0;
  std::vector<comm::Handle> stage1_handles_;
  std::vector<char> stage1_launched_;
  std::vector<Clock::time_point> stage1_times_;
  std::vector<int> trace_;  // stage 3: the acquire order of one step, for prefetching
  size_t trace_pos_ = 0;
  bool trace_valid_ = false, recording_ = true;
  uint64_t use_clock_ = 0;
  int held_ = -1;
  int last_released_ = -1;  // stage 3: still valid until another block is acquired
  bool last_microbatch_ = true;
  std::unique_ptr<comm::ScalarReducer> norm_;
  GradSyncTiming timing_;
  double comm_ms_ = 0, hidden_ms_ = 0;
  int64_t adam_step_ = 0;
};

}  // namespace zt
