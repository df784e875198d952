#pragma once
// ZeroOptimizer owns the model states — working parameters and gradients in the model's
// precision, fp32 master parameters and Adam moments — and serves them to the model as its
// ParamSource. Stage 0 (this file's single-process form) keeps everything resident; the ZeRO
// stages change what is resident and how gradients reach the optimizer, never the model.
#include <array>
#include <cstdint>
#include <memory>

#include "src/core/memory_pool.h"
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

// The data-parallel group and how gradients cross it. A null group (or one rank) trains alone.
struct DataParallelConfig {
  comm::Communicator* group = nullptr;
  int64_t reduce_bucket_elems = 500'000'000;  // DeepSpeed's reduce_bucket_size default
  bool overlap_comm = true;
};

struct StepResult {
  double grad_norm = 0;  // before clipping, after unscaling
  bool skipped = false;  // non-finite gradients: no parameter changed
};

class ZeroOptimizer final : public ParamSource {
 public:
  ZeroOptimizer(const ParamLayout& layout, DType working, const AdamConfig& adam, MemoryPool& pool,
                uint64_t seed, const DataParallelConfig& dp = {});
  ~ZeroOptimizer() override;

  const float* acquire(int block) override;
  void release(int block) override;
  float* grads(int block) override;
  void grads_done(int block) override;

  void zero_grad();
  // Before each micro-batch's forward/backward: gradients cross the data-parallel group only
  // during the last one of a step.
  void begin_microbatch(bool last);
  // Timing of the last step's gradient communication (zeros without data parallelism).
  GradSyncTiming grad_sync_timing() const;
  // After master parameters were written (loading weights): re-derive the working copy.
  void sync_working_from_master();
  // Unscales by loss_scale, clips, and applies one AdamW step at learning rate lr.
  StepResult step(double lr, double loss_scale);

  const ParamLayout& layout() const { return layout_; }
  DType working_dtype() const { return working_; }
  Tensor working_params() const { return params_.view({layout_.numel()}, working_); }
  Tensor working_grads() const { return grads_.view({layout_.numel()}, working_); }
  // fp32 master parameters (the working parameters themselves in fp32 training).
  Tensor master_params() const;
  Tensor adam_m() const { return m_.view({layout_.numel()}, DType::F32); }
  Tensor adam_v() const { return v_.view({layout_.numel()}, DType::F32); }
  int64_t adam_step() const { return adam_step_; }

 private:
  struct Slot {
    Buffer buffer;
    int block = -1;
  };
  bool half() const { return working_ != DType::F32; }
  int64_t max_block_numel() const;
  Slot& grad_slot(int block);

  ParamLayout layout_;
  DType working_;
  AdamConfig adam_;
  Buffer params_;  // working precision
  Buffer grads_;   // working precision
  Buffer master_;  // fp32, only when working precision is half
  Buffer m_, v_;
  // Half precision only: fp32 views the model computes with. One parameter slot (the model
  // holds one block at a time) and two gradient slots (the tied embedding's gradient is open
  // from the head's backward until the embedding's).
  Slot param_slot_;
  std::array<Slot, 2> grad_slots_;
  Buffer chunk_;  // fp32 staging for the optimizer step, constant size
  std::unique_ptr<DpGradSync> sync_;
  int64_t adam_step_ = 0;
};

}  // namespace zt
