#include "src/pipeline/stage_runner.h"

#include <chrono>
#include <thread>

#include "src/core/error.h"
#include "src/pipeline/exchange.h"

namespace zt::pipeline {
namespace {

using Clock = std::chrono::steady_clock;
bool holds_batch(const ScheduleShape& s, int stage) {
  return stage == 0 || stage == s.stages - 1;
}

}  // namespace

ActivationSlots StageRunner::slots(const GptConfig& config, const ScheduleShape& shape,
                                   const PipelinePart& part) {
  // A slot's input stays in its buffer until the slot's backward: the first checkpoint.
  const std::vector<int> first = part.layers(config, 0);
  const int period = part.chunks > 1 ? part.layers(config, 1).front() - first.front() : 0;
  return ActivationSlots{max_in_flight(shape, part.rank), static_cast<int>(first.size()), true,
                         first.front(), period};
}

size_t StageRunner::buffer_bytes(const GptConfig& c, int micro_batch, int tp_size,
                                 const ScheduleShape& shape, int stage) {
  const int64_t n = int64_t{micro_batch} * c.local_seq();
  const size_t rows =
      Arena::aligned(static_cast<size_t>(splits_sequence(c, tp_size) ? n / tp_size : n) *
                     static_cast<size_t>(c.hidden) * dtype_size(c.dtype));
  const size_t batch = holds_batch(shape, stage) ? Arena::aligned(static_cast<size_t>(n) * 8) : 0;
  const bool last = stage == shape.stages - 1;
  const auto slots = static_cast<size_t>(max_in_flight(shape, stage));
  const auto sends = static_cast<size_t>(std::max(exchange_sends(shape, stage, true).buffers,
                                                  exchange_sends(shape, stage, false).buffers));
  return slots * (rows * (last ? 2 : 1) + batch) + rows * (sends + 1);
}

StageRunner::StageRunner(Gpt& model, ActivationStore& acts, comm::Communicator& pp,
                         const ScheduleShape& shape, const DeviceContext& ctx, int micro_batch)
    : model_(model),
      acts_(acts),
      pp_(pp),
      shape_(shape),
      stage_(pp.rank()),
      be_(ctx.backend()),
      rows_(int64_t{model.dims().Nl} * model.dims().C),
      tokens_(int64_t{micro_batch} * model.config().local_seq()),
      arena_(
          ctx.pool(),
          buffer_bytes(model.config(), micro_batch,
                       model.dims().tp != nullptr ? model.dims().tp->size() : 1, shape, pp.rank()),
          MemCategory::Activations) {
  validate(shape_);
  ZT_CHECK(pp.size() == shape_.stages, "pipeline group of {} ranks for {} stages", pp.size(),
           shape_.stages);
  train_steps_ = stage_schedule(shape_, stage_);
  eval_steps_ = forward_only_schedule(shape_);
  train_plan_ = exchange_sends(shape_, stage_, true);
  eval_plan_ = exchange_sends(shape_, stage_, false);
  train_ends_ = round_ends(shape_, train_steps_);
  eval_ends_ = round_ends(shape_, eval_steps_);
  const DType t = model.config().dtype;
  auto carve = [&] { return Ref(arena_.carve({rows_}, t).data(), t); };
  slots_.resize(static_cast<size_t>(max_in_flight(shape_, stage_)));
  for (Slot& s : slots_) {
    s.input = carve();
    if (stage_ == shape_.stages - 1) s.dout = carve();
    if (holds_batch(shape_, stage_))  // int32 ids: 4-byte elements
      s.batch = static_cast<int32_t*>(arena_.carve({2 * tokens_}, DType::F32).data());
  }
  dout_ = carve();
  const int sends = std::max(train_plan_.buffers, eval_plan_.buffers);
  for (int k = 0; k < sends; ++k) send_buffers_.push_back(carve());
  slot_of_.assign(static_cast<size_t>(shape_.micro_batches * shape_.chunks), -1);
}

int StageRunner::tag(const P2pOp& op) {
  // The message id names the micro-batch, the edge and the direction: unique among the messages
  // in flight between two stages (a few micro-batches), and within every MPI's tag bound
  // (>= 32767) after the modulo.
  return op.message % 32768;
}

Tensor StageRunner::rows(Ref r) const {
  return Tensor(r.p, {rows_}, r.t, be_.device());
}

int StageRunner::take_slot() {
  ZT_CHECK(!free_.empty(), "pipeline stage {}: more micro-batches in flight than its {} slots",
           stage_, slots_.size());
  const int k = free_.back();
  free_.pop_back();
  return k;
}

void StageRunner::wait(comm::Handle& h, Result& r) {
  if (h.done()) return;
  comm::StampRef from = pp_.stamp();
  h.wait();
  r.wait.add(std::move(from), pp_.stamp());
}

void StageRunner::join(const SendPlan* plan, int step, Result& r) {
  for (size_t i = 0; i < sends_.size(); ++i) {
    Send& s = sends_[i];
    if (s.buffer < 0 || (plan != nullptr && plan->join_at[i] != step)) continue;
    wait(s.handle, r);
    free_buffers_.push_back(s.buffer);
    s.buffer = -1;
  }
}

Tensor StageRunner::receive_buffer(const Step& st, int slot) {
  return st.kind == Step::Forward ? rows(slots_[static_cast<size_t>(slot)].input) : rows(dout_);
}

void StageRunner::exchange(const std::vector<Step>& steps, const std::vector<int>& ends, int begin,
                           int end) {
  std::vector<comm::Communicator::PeerOp> ops;
  std::vector<comm::Handle*> into;
  for (int k = begin; k < end; ++k)
    if (sends_[static_cast<size_t>(k)].buffer >= 0 && !sends_[static_cast<size_t>(k)].issued) {
      const P2pOp op = send_of(shape_, stage_, steps[static_cast<size_t>(k)]);
      Send& out = sends_[static_cast<size_t>(k)];
      ops.push_back({true, rows(send_buffers_[static_cast<size_t>(out.buffer)]), op.peer, tag(op)});
      into.push_back(&out.handle);
      out.issued = true;
    }
  // The next round's receives, each into the slot its step will use.
  const int n = static_cast<int>(steps.size());
  const int from = end, to = end < n ? ends[static_cast<size_t>(end)] : n;
  for (int k = from; k < to; ++k) {
    const Step& nx = steps[static_cast<size_t>(k)];
    if (!step_receives(shape_, stage_, nx)) continue;
    int& slot = slot_of_[static_cast<size_t>(nx.micro_batch * shape_.chunks + nx.chunk)];
    if (nx.kind == Step::Forward) slot = take_slot();
    const P2pOp in = receive_of(shape_, stage_, nx);
    ops.push_back({false, receive_buffer(nx, slot), in.peer, tag(in)});
    into.push_back(&incoming_[static_cast<size_t>(k)]);
  }
  if (ops.empty()) return;
  std::vector<comm::Handle> handles = pp_.batch_async(ops);
  for (size_t k = 0; k < handles.size(); ++k) *into[k] = std::move(handles[k]);
}

void StageRunner::run_step(const std::vector<Step>& steps, const std::vector<int>& ends, size_t i,
                           const SendPlan& plan, Result& r, ParamSource& params,
                           const LoadBatch& load, float dloss, const Seeds* seeds) {
  if (i == 0) exchange(steps, ends, 0, 0);  // the first round's receives, alone
  const Step& st = steps[i];
  const int m = st.micro_batch, c = st.chunk;
  const bool forward = st.kind == Step::Forward;
  int& where = slot_of_[static_cast<size_t>(m * shape_.chunks + c)];
  if (forward && where < 0) where = take_slot();  // else taken when its receive was posted
  ZT_CHECK(where >= 0, "pipeline stage {}: backward of micro-batch {} before its forward", stage_,
           m);
  Slot& s = slots_[static_cast<size_t>(where)];
  // The receive went out with the previous round's batch (exchange.h); its arrival proves the
  // sends plan_sends() names received (schedule.h), which are joined here.
  comm::Handle incoming = std::move(incoming_[i]);
  const Ref dout = !forward && !last_virtual(c) ? dout_ : s.dout;
  if (forward && (first_virtual(c) || last_virtual(c))) load(m, s.batch);
  wait(incoming, r);
  join(&plan, static_cast<int>(i), r);
  const bool sends = step_sends(shape_, stage_, st);
  Ref out = forward ? s.dout : Ref();
  if (sends) {
    ZT_CHECK(!free_buffers_.empty(), "pipeline stage {}: no free send buffer at step {}", stage_,
             i);
    sends_[i].buffer = free_buffers_.back();
    free_buffers_.pop_back();
    out = send_buffers_[static_cast<size_t>(sends_[i].buffer)];
  }
  acts_.select_slot(where);
  const Gpt::ChunkIO chunk{c, s.batch, s.batch != nullptr ? s.batch + tokens_ : nullptr, s.input,
                           out};
  const comm::StampRef computing = pp_.stamp();
  const auto t0 = Clock::now();
  if (forward) {
    const DropoutSeeds rng = seeds != nullptr ? (*seeds)(m) : DropoutSeeds{};
    r.loss += model_.chunk_forward(chunk, dloss, params, acts_, seeds != nullptr ? &rng : nullptr);
  } else {
    model_.chunk_backward(chunk, dout, out, params, acts_, (*seeds)(m));
  }
  if (const double d = delay_ms_[forward ? 0 : 1]; d > 0)
    std::this_thread::sleep_until(t0 +
                                  std::chrono::duration<double, std::milli>(d / shape_.chunks));
  r.busy.add(computing, pp_.stamp());
  if (!forward || seeds == nullptr) {  // backward done, or a forward with no backward to come
    free_.push_back(where);
    where = -1;
  }
  // The round's last step: its sends and the next round's receives, as one batch.
  const int end = ends[i];
  if (static_cast<int>(i) + 1 == end) {
    int begin = static_cast<int>(i);
    while (begin > 0 && ends[static_cast<size_t>(begin - 1)] == end) --begin;
    exchange(steps, ends, begin, end);
  }
}

StageRunner::Result StageRunner::run(const std::vector<Step>& steps, const std::vector<int>& ends,
                                     const SendPlan& plan, ParamSource& params,
                                     const LoadBatch& load, float dloss, const Seeds* seeds) {
  const comm::StampRef start = pp_.stamp();
  Result r;
  free_.clear();
  for (int k = static_cast<int>(slots_.size()) - 1; k >= 0; --k) free_.push_back(k);
  free_buffers_.clear();
  for (int k = static_cast<int>(send_buffers_.size()) - 1; k >= 0; --k) free_buffers_.push_back(k);
  sends_.clear();
  sends_.resize(steps.size());
  incoming_.clear();
  incoming_.resize(steps.size());
  for (size_t i = 0; i < steps.size(); ++i)
    run_step(steps, ends, i, plan, r, params, load, dloss, seeds);
  join(nullptr, 0, r);
  r.total.add(start, pp_.stamp());
  return r;
}

StageRunner::Result StageRunner::train(ParamSource& params, const LoadBatch& load, float dloss,
                                       const Seeds& seeds, const BeginRun& begin) {
  begin(true);
  return run(train_steps_, train_ends_, train_plan_, params, load, dloss, &seeds);
}

void StageRunner::evaluate(ParamSource& params, const LoadBatch& load, const BeginRun& begin,
                           double& loss_sum) {
  begin(true);
  loss_sum += run(eval_steps_, eval_ends_, eval_plan_, params, load, 0.0f, nullptr).loss;
}

}  // namespace zt::pipeline
