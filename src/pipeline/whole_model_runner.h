#pragma once
// WholeModelRunner: the micro-batches of a model that is one pipeline stage, each through the
// model's whole forward and backward (Gpt::forward_backward) before the next is loaded: the
// order 1F1B has at P = 1 (F0 B0 F1 B1 ...), with no stage to exchange with. Each micro-batch is
// its own run (BeginRun), so ZeRO stages 0–1 can overlap the reduction with the last one's
// backward.
#include <cstdint>

#include "src/pipeline/micro_batch_runner.h"

namespace zt::pipeline {

class WholeModelRunner final : public MicroBatchRunner {
 public:
  // `batch`: device memory for one micro-batch's tokens then targets ([B, T] int32 each).
  WholeModelRunner(Gpt& model, ActivationStore& acts, const ScheduleShape& shape, int micro_batch,
                   int32_t* batch);

  Result train(ParamSource& params, const LoadBatch& load, float dloss, const Seeds& seeds,
               const BeginRun& begin) override;
  void evaluate(ParamSource& params, const LoadBatch& load, const BeginRun& begin,
                double& loss_sum) override;
  const ScheduleShape& shape() const override { return shape_; }

 private:
  Gpt& model_;
  ActivationStore& acts_;
  ScheduleShape shape_;
  int32_t* tokens_;
  int32_t* targets_;
};

}  // namespace zt::pipeline
