#include "src/pipeline/whole_model_runner.h"

#include <chrono>
#include <thread>

#include "src/core/error.h"

namespace zt::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

WholeModelRunner::WholeModelRunner(Gpt& model, ActivationStore& acts, const ScheduleShape& shape,
                                   int micro_batch, int32_t* batch)
    : model_(model),
      acts_(acts),
      shape_(shape),
      tokens_(batch),
      targets_(batch + int64_t{micro_batch} * model.config().local_seq()) {
  ZT_CHECK(shape_.stages == 1, "the whole model's passes are one pipeline stage's, not {}",
           shape_.stages);
  ZT_CHECK(batch != nullptr, "no micro-batch buffer");
}

MicroBatchRunner::Result WholeModelRunner::train(ParamSource& params, const LoadBatch& load,
                                                 float dloss, const Seeds& seeds,
                                                 const BeginRun& begin) {
  // Host times: with one stage nothing reads them as overlap (no bubble, no neighbours).
  const comm::StampRef start = comm::HostStamp::now();
  Result r;
  for (int m = 0; m < shape_.micro_batches; ++m) {
    load(m, tokens_);
    begin(m == shape_.micro_batches - 1);
    const auto t0 = Clock::now();
    r.loss += model_.forward_backward(tokens_, targets_, dloss, params, acts_, seeds(m));
    if (const double d = delay_ms_[0] + delay_ms_[1]; d > 0)
      std::this_thread::sleep_until(t0 + std::chrono::duration<double, std::milli>(d));
    r.busy.add(comm::HostStamp::at(t0), comm::HostStamp::now());
  }
  r.total.add(start, comm::HostStamp::now());
  return r;
}

void WholeModelRunner::evaluate(ParamSource& params, const LoadBatch& load, const BeginRun& begin,
                                double& loss_sum) {
  for (int m = 0; m < shape_.micro_batches; ++m) {
    load(m, tokens_);
    begin(m == shape_.micro_batches - 1);
    loss_sum += model_.forward_loss(tokens_, targets_, params, acts_);
  }
}

}  // namespace zt::pipeline
