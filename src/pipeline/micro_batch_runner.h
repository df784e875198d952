#pragma once
// MicroBatchRunner: the forward and backward passes of one training step's micro-batches (or
// one evaluation's forward passes) on this rank, in the order its pipeline stage needs. The
// trainer drives one, whatever the layout, in one loop:
//   - one stage (WholeModelRunner): each micro-batch's whole forward and backward in turn;
//   - several stages (StageRunner): the stage's 1F1B or interleaved schedule, exchanging chunk
//     inputs and gradients with its neighbours.
// One stage is not StageRunner at P = 1: Gpt::chunk_forward / chunk_backward hand the tied
// embedding's gradient over in two parts (the head's in the last chunk's forward, the lookup's in
// the first chunk's backward), which ParamSource allows once per micro-batch, and a stage's slots
// and chunk buffers would be memory a single stage does not need.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "src/comm/communicator.h"
#include "src/model/activation_store.h"
#include "src/model/gpt.h"
#include "src/pipeline/schedule.h"

namespace zt::pipeline {

class MicroBatchRunner {
 public:
  // Writes micro-batch m's tokens then targets ([B, T] int32 each) into `dst`, device memory.
  using LoadBatch = std::function<void(int m, int32_t* dst)>;
  // Micro-batch m's dropout seeds.
  using Seeds = std::function<DropoutSeeds(int m)>;
  // Called before each run of passes the runner makes without a break: before every micro-batch
  // where they run one after another, once before a schedule that interleaves them. `last`: no
  // pass of this call follows the run (ZeRO stages 0–1 reduce gradients during it under
  // --overlap-comm).
  using BeginRun = std::function<void(bool last)>;
  // Times on the pipeline group's timeline (src/comm/timeline.h: the host clock, or on NCCL
  // events on the compute stream, where the host only enqueues), read after the step.
  struct Result {
    double loss = 0;          // Σ over micro-batches of their mean loss (last stage; 0 elsewhere)
    comm::IntervalSum busy;   // in the model's forward and backward
    comm::IntervalSum wait;   // blocked on the neighbours (receives, joining sends)
    comm::IntervalSum total;  // the whole run
  };

  virtual ~MicroBatchRunner() = default;
  // One training step's forward and backward passes; gradients go to `params`, scaled by
  // `dloss`.
  virtual Result train(ParamSource& params, const LoadBatch& load, float dloss, const Seeds& seeds,
                       const BeginRun& begin) = 0;
  // Forward passes only (dropout off), micro-batches in order: each one's mean loss is added to
  // `loss_sum` (a stage without the loss adds 0).
  virtual void evaluate(ParamSource& params, const LoadBatch& load, const BeginRun& begin,
                        double& loss_sum) = 0;
  virtual const ScheduleShape& shape() const = 0;

  // Adds this much time to every forward / backward pass of a micro-batch through the whole
  // stage, as if it computed that long: the bubble tests give every stage the same, known step
  // time, which the model's own compute on shared cores is not.
  void set_step_delay_ms(double forward, double backward) {
    delay_ms_[0] = forward;
    delay_ms_[1] = backward;
  }

 protected:
  double delay_ms_[2] = {0, 0};
};

// The runner of this rank's part of `shape`. `pp`: the pipeline group (group rank = stage; may
// be null with one stage). `batch`: device memory for one micro-batch's tokens then targets,
// which a single stage loads into. A pipeline stage's buffers come from ctx.pool()
// (activations).
std::unique_ptr<MicroBatchRunner> make_runner(Gpt& model, ActivationStore& acts,
                                              comm::Communicator* pp, const ScheduleShape& shape,
                                              const DeviceContext& ctx, int micro_batch,
                                              int32_t* batch);
// The activation slots the runner of `stage` needs (one, of every layer, with one stage).
ActivationSlots runner_slots(const GptConfig& config, const ScheduleShape& shape,
                             const PipelinePart& part);
// What make_runner allocates (for the planner): nothing with one stage.
size_t runner_buffer_bytes(const GptConfig& config, int micro_batch, int tp_size,
                           const ScheduleShape& shape, int stage);

}  // namespace zt::pipeline
