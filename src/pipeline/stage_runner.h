#pragma once
// StageRunner: executes one pipeline stage's schedule (schedule.h) for a training step or an
// evaluation: for each step it receives the chunk's input (or output gradient) from the
// neighbouring virtual stage, runs the model's chunk forward or backward, and sends the result
// on, point to point over the pipeline group in the working precision.
//
// A stage holds up to max_in_flight(shape, stage) micro-batches between their forward and
// backward. Each sits in a slot: its activations (the ActivationStore's slot of the same index),
// its chunk input [Nl, C] (kept for the backward), on the last stage its output's gradient
// [Nl, C] (made by the forward of the last virtual stage) and, on the stages that hold the first
// or last virtual stage, its tokens and targets. A step waits for its receive, then joins the
// sends exchange_sends() says that receive proves matched, then computes; what it sends is
// written into a send buffer held until that join (schedule.h: no wait depends on a stage's
// later steps, and the buffers are a constant number per stage). After a round's last step
// (exchange.h) its sends and the next round's receives go out as one batch.
#include <cstdint>
#include <functional>
#include <vector>

#include "src/comm/communicator.h"
#include "src/model/gpt.h"
#include "src/pipeline/micro_batch_runner.h"
#include "src/pipeline/schedule.h"

namespace zt::pipeline {

class StageRunner final : public MicroBatchRunner {
 public:
  // `pp`: the pipeline group (group rank = stage). Buffers come from ctx.pool() (activations).
  StageRunner(Gpt& model, ActivationStore& acts, comm::Communicator& pp, const ScheduleShape& shape,
              const DeviceContext& ctx, int micro_batch);

  // What the constructor allocates (for the planner).
  static size_t buffer_bytes(const GptConfig& config, int micro_batch, int tp_size,
                             const ScheduleShape& shape, int stage);
  // The activation slots a stage needs: one per micro-batch in flight, each slot's chunk input
  // kept until its backward (a checkpointing store's first checkpoint).
  static ActivationSlots slots(const GptConfig& config, const ScheduleShape& shape,
                               const PipelinePart& part);

  // The whole schedule is one run: begin(true) once, before it (the data-parallel reduction
  // waits for the step's end).
  Result train(ParamSource& params, const LoadBatch& load, float dloss, const Seeds& seeds,
               const BeginRun& begin) override;
  void evaluate(ParamSource& params, const LoadBatch& load, const BeginRun& begin,
                double& loss_sum) override;

  const ScheduleShape& shape() const override { return shape_; }
  int stage() const { return stage_; }

 private:
  struct Slot {
    Ref input, dout;
    int32_t* batch = nullptr;  // tokens then targets
  };
  struct Send {
    int buffer = -1;
    bool issued = false;
    comm::Handle handle;
  };
  bool first_virtual(int chunk) const { return stage_ == 0 && chunk == 0; }
  bool last_virtual(int chunk) const {
    return stage_ == shape_.stages - 1 && chunk == shape_.chunks - 1;
  }
  static int tag(const P2pOp& op);
  Tensor rows(Ref r) const;
  // Where step `st` receives into: its slot's input (forward) or the output-gradient buffer.
  Tensor receive_buffer(const Step& st, int slot);
  int take_slot();
  // Joins the sends `plan` says to join at step `step` (every one: null plan), freeing their
  // buffers.
  void join(const SendPlan* plan, int step, Result& r);
  void wait(comm::Handle& h, Result& r);
  // One batch: the sends of steps [begin, end) not yet issued and the receives of the round
  // that starts at `end` (`ends`: round_ends of `steps`).
  void exchange(const std::vector<Step>& steps, const std::vector<int>& ends, int begin, int end);
  // One step of `steps` (index i): wait for its receive, join, compute; at a round's end, the
  // batch.
  void run_step(const std::vector<Step>& steps, const std::vector<int>& ends, size_t i,
                const SendPlan& plan, Result& r, ParamSource& params, const LoadBatch& load,
                float dloss, const Seeds* seeds);
  Result run(const std::vector<Step>& steps, const std::vector<int>& ends, const SendPlan& plan,
             ParamSource& params, const LoadBatch& load, float dloss, const Seeds* seeds);

  Gpt& model_;
  ActivationStore& acts_;
  comm::Communicator& pp_;
  ScheduleShape shape_;
  int stage_ = 0;
  Backend& be_;
  int64_t rows_ = 0;    // Nl·C
  int64_t tokens_ = 0;  // B·T
  Arena arena_;
  std::vector<Slot> slots_;
  std::vector<int> free_;
  Ref dout_;                  // [Nl, C] a received output gradient
  std::vector<int> slot_of_;  // by m·chunks + chunk during a step, -1 when none
  std::vector<Step> train_steps_, eval_steps_;
  std::vector<int> train_ends_, eval_ends_;  // round_ends (exchange.h)
  SendPlan train_plan_, eval_plan_;
  std::vector<Ref> send_buffers_;  // [Nl, C] each
  std::vector<int> free_buffers_;
  std::vector<Send> sends_;             // by step index of the running list
  std::vector<comm::Handle> incoming_;  // by step index: its receive, once posted
};

}  // namespace zt::pipeline
