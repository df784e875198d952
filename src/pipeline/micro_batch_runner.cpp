#include "src/pipeline/micro_batch_runner.h"

#include "src/core/error.h"
#include "src/pipeline/stage_runner.h"
#include "src/pipeline/whole_model_runner.h"

namespace zt::pipeline {

std::unique_ptr<MicroBatchRunner> make_runner(Gpt& model, ActivationStore& acts,
                                              comm::Communicator* pp, const ScheduleShape& shape,
                                              const DeviceContext& ctx, int micro_batch,
                                              int32_t* batch) {
  if (shape.stages == 1)
    return std::make_unique<WholeModelRunner>(model, acts, shape, micro_batch, batch);
  ZT_CHECK(pp != nullptr, "a pipeline of {} stages without its group", shape.stages);
  return std::make_unique<StageRunner>(model, acts, *pp, shape, ctx, micro_batch);
}

ActivationSlots runner_slots(const GptConfig& config, const ScheduleShape& shape,
                             const PipelinePart& part) {
  return shape.stages > 1 ? StageRunner::slots(config, shape, part) : ActivationSlots{};
}

size_t runner_buffer_bytes(const GptConfig& config, int micro_batch, int tp_size,
                           const ScheduleShape& shape, int stage) {
  return shape.stages > 1 ? StageRunner::buffer_bytes(config, micro_batch, tp_size, shape, stage)
                          : 0;
}

}  // namespace zt::pipeline
