#include "src/zero/partitioned_states.h"

#include <algorithm>

#include "src/zero/precision.h"
#include "src/zero/replicated_states.h"

namespace zt {
namespace {

constexpr int64_t kChunk = int64_t{1} << 20;  // fp32 staging: 4 MiB

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

PartitionedStates::PartitionedStates(const ParamLayout& layout, DType working,
                                     const AdamConfig& adam, const DeviceContext& ctx,
                                     uint64_t seed, const ZeroConfig& zero)
    : layout_(layout),
      working_(working),
      adam_(adam),
      zero_(zero),
      ctx_(ctx),
      be_(ctx.backend()),
      dp_(*zero.dp),
      part_(layout, zero.dp->size(), zero.dp->rank(), zero.reduce_bucket_elems) {
  ZT_CHECK(zero.stage >= 1 && zero.stage <= 3, "stage {} is not partitioned", zero.stage);
  MemoryPool& pool = ctx.pool();
  const int64_t shard = part_.shard_numel(), padded = part_.padded_numel();
  const int64_t max_unit = part_.max_unit();
  int64_t max_part = 0;
  for (const auto& u : part_.units()) max_part = std::max(max_part, u.part_len);
  if (zero.stage <= 2) full_params_ = pool.allocate({padded}, working_, MemCategory::Params);
  if (zero.stage == 3) shard_params_ = pool.allocate({shard}, working_, MemCategory::Params);
  if (zero.stage == 1) full_grads_ = pool.allocate({padded}, working_, MemCategory::Grads);
  if (zero.stage >= 2) shard_grads_ = pool.allocate({shard}, working_, MemCategory::Grads);
  master_ = pool.allocate({shard}, DType::F32, MemCategory::Optimizer);
  m_ = pool.allocate({shard}, DType::F32, MemCategory::Optimizer);
  v_ = pool.allocate({shard}, DType::F32, MemCategory::Optimizer);
  // Constant-size buffers: each is sized by the partition unit, none by a block or the depth.
  f32_chunk_ = pool.allocate({std::max(kChunk, max_part)}, DType::F32, MemCategory::Buffers);
  if (zero.stage >= 2 || half())
    staging_ = GradStaging(ctx, longest_chunk(layout_, zero.reduce_bucket_elems));
  for (const auto& u : part_.units()) unit_pending_.push_back(u.real_len);
  unit_fill_.assign(part_.units().size(), -1);
  if (half()) dp_.reserve_staging(static_cast<size_t>(max_unit), kReductions);
  if (zero.stage >= 2) {
    reductions_.resize(kReductions);
    for (auto& r : reductions_) {
      r.input = pool.allocate({max_unit}, working_, MemCategory::Buffers);
      r.output = pool.allocate({max_part}, working_, MemCategory::Buffers);
    }
  }
  if (zero.stage == 1) {
    stage1_handles_.resize(part_.units().size());
    stage1_launched_.assign(part_.units().size(), 0);
    stage1_times_.resize(part_.units().size());
  }
  if (zero.stage == 3) {
    // Units of blocks at or below the persistence threshold keep their gathered copy for the
    // whole step; the others share kGatherSlots slots.
    bool shared = false;
    for (int k = 0; k < static_cast<int>(part_.units().size()); ++k) {
      const auto& u = unit(k);
      if (layout_.blocks()[static_cast<size_t>(u.block)].numel() >
          zero.param_persistence_threshold) {
        shared = true;
        continue;
      }
      Gathered g;
      g.buffer = pool.allocate({u.padded_len}, working_, MemCategory::Buffers);
      g.reserved = k;
      gathered_.push_back(std::move(g));
    }
    for (int i = 0; shared && i < kGatherSlots; ++i) {
      Gathered g;
      g.buffer = pool.allocate({max_unit}, working_, MemCategory::Buffers);
      gathered_.push_back(std::move(g));
    }
  }
  if (zero.world != nullptr && zero.world->size() > 1)
    norm_ = std::make_unique<comm::ScalarReducer>(*zero.world, ctx.host(), 1);
  // Initialise the own shard of the master parameters element by element, and the working
  // parameters (all of them in stages 1-2, the shard in stage 3) from the same values, through the
  // constant-size staging chunk: the full model is never materialised in fp32. Where the host
  // cannot write the device, the values are made in a host chunk of the same size and copied.
  float* master = master_.view({shard}, DType::F32).f32();
  const auto& params = layout_.params();
  auto* chunk = static_cast<float*>(f32_chunk_.data());
  // The host chunk stays small (the device chunk grows with the largest unit part).
  const int64_t room = ctx.needs_staging()
                           ? std::min(kChunk, static_cast<int64_t>(f32_chunk_.bytes() / 4))
                           : static_cast<int64_t>(f32_chunk_.bytes() / 4);
  Buffer host_chunk;
  float* make = chunk;  // where init_parameter_range writes
  if (ctx.needs_staging()) {
    host_chunk = ctx.host().allocate({room}, DType::F32, MemCategory::Buffers);
    make = static_cast<float*>(host_chunk.data());
  }
  for (const auto& s : part_.segments()) {
    const auto& p = params[static_cast<size_t>(s.param)];
    if (!ctx.needs_staging()) {
      init_parameter_range(p, seed, s.layout_offset - p.offset, s.len, master + s.shard_offset);
      continue;
    }
    for (int64_t i = 0; i < s.len; i += room) {
      const int64_t len = std::min(room, s.len - i);
      init_parameter_range(p, seed, s.layout_offset - p.offset + i, len, make);
      be_.copy_to_device(master + s.shard_offset + i, make, static_cast<size_t>(len) * 4);
    }
  }
  if (zero.stage == 3) {
    from_f32(be_, shard_params_.data(), working_, master, shard);
  } else {
    for (const auto& p : params) {
      for (int64_t i = 0; i < p.numel();) {
        // A parameter may span several units, each padded: convert unit by unit.
        const auto& u = unit(part_.unit_of(p.offset + i));
        const int64_t len =
            std::min({room, p.numel() - i, u.layout_begin + u.real_len - (p.offset + i)});
        init_parameter_range(p, seed, i, len, make);
        if (make != chunk) be_.copy_to_device(chunk, make, static_cast<size_t>(len) * 4);
        from_f32(be_, at(full_params_.data(), working_, part_.padded_of(p.offset + i)), working_,
                 chunk, len);
        i += len;
      }
    }
  }
}

PartitionedStates::~PartitionedStates() {
  for (auto& r : reductions_) r.handle = comm::Handle();
  for (auto& g : gathered_) g.pending = comm::Handle();
}

Tensor PartitionedStates::typed(const Buffer& b, int64_t offset, int64_t n, DType t) const {
  return b.view({offset + n}, t).slice(offset, {n});
}

void PartitionedStates::set_master(const float* full) {
  float* master = master_.view({part_.shard_numel()}, DType::F32).f32();
  for (const auto& s : part_.segments())
    be_.copy_to_device(master + s.shard_offset, full + s.layout_offset,
                       static_cast<size_t>(s.len) * 4);
  if (zero_.stage == 3) {
    from_f32(be_, shard_params_.data(), working_, master, part_.shard_numel());
    for (auto& g : gathered_) g.unit = -1;
    return;
  }
  // Every rank has the full copy: convert it into padded space directly, unit by unit (through
  // the fp32 chunk where the host cannot reach the device).
  auto* chunk = static_cast<float*>(f32_chunk_.data());
  const int64_t room = static_cast<int64_t>(f32_chunk_.bytes() / 4);
  for (const auto& u : part_.units()) {
    void* dst = at(full_params_.data(), working_, u.padded_begin);
    if (!ctx_.needs_staging()) {
      from_f32(be_, dst, working_, full + u.layout_begin, u.real_len);
      continue;
    }
    for (int64_t i = 0; i < u.real_len; i += room) {
      const int64_t len = std::min(room, u.real_len - i);
      be_.copy_to_device(chunk, full + u.layout_begin + i, static_cast<size_t>(len) * 4);
      from_f32(be_, at(dst, working_, i), working_, chunk, len);
    }
  }
}

void PartitionedStates::gather_master(float* full) {
  const int64_t max_unit = part_.max_unit();
  // The gather lands in the backend's memory: a host vector on the CPU, a device buffer for the
  // duration of this call elsewhere (checkpoint reshaping and tests call it, never a step).
  std::vector<float> host_tmp;
  Buffer device_tmp;
  float* tmp = nullptr;
  if (ctx_.needs_staging()) {
    device_tmp = ctx_.pool().allocate({max_unit}, DType::F32, MemCategory::Buffers);
    tmp = static_cast<float*>(device_tmp.data());
  } else {
    host_tmp.resize(static_cast<size_t>(max_unit));
    tmp = host_tmp.data();
  }
  const float* master = master_.view({part_.shard_numel()}, DType::F32).f32();
  for (const auto& u : part_.units()) {
    Tensor out(tmp, {u.padded_len}, DType::F32, be_.device());
    Tensor in(const_cast<float*>(master) + u.shard_offset, {u.part_len}, DType::F32, be_.device());
    dp_.all_gather(in, out);
    be_.copy_to_host(full + u.layout_begin, tmp, static_cast<size_t>(u.real_len) * 4);
  }
}

std::vector<Tensor> PartitionedStates::owned_state() {
  const int64_t n = part_.shard_numel();
  return {master_.view({n}, DType::F32), m_.view({n}, DType::F32), v_.view({n}, DType::F32)};
}

void PartitionedStates::set_state_from_layout_order(const float* master, const float* m,
                                                    const float* v) {
  const int64_t n = part_.shard_numel();
  float* dst[3] = {master_.view({n}, DType::F32).f32(), m_.view({n}, DType::F32).f32(),
                   v_.view({n}, DType::F32).f32()};
  const float* src[3] = {master, m, v};
  for (int k = 0; k < 3; ++k)
    for (const auto& s : part_.segments())
      be_.copy_to_device(dst[k] + s.shard_offset, src[k] + s.layout_offset,
                         static_cast<size_t>(s.len) * 4);
}

void PartitionedStates::after_load(int64_t adam_step) {
  adam_step_ = adam_step;
  const float* master = master_.view({part_.shard_numel()}, DType::F32).f32();
  if (zero_.stage == 3) {
    from_f32(be_, shard_params_.data(), working_, master, part_.shard_numel());
    for (auto& g : gathered_) g.unit = -1;
    return;
  }
  const int rank = dp_.rank();
  for (const auto& u : part_.units())
    from_f32(be_, at(full_params_.data(), working_, u.padded_begin + int64_t{rank} * u.part_len),
             working_, master + u.shard_offset, u.part_len);
  all_gather_updated_params();
}

// ---- parameters -------------------------------------------------------------------------------

PartitionedStates::Gathered* PartitionedStates::find_gathered(int u) {
  for (auto& g : gathered_)
    if (g.unit == u) return &g;
  return nullptr;
}

PartitionedStates::Gathered& PartitionedStates::start_gather(int u) {
  Gathered* slot = nullptr;
  for (auto& g : gathered_)  // a persistent slot reserved for this unit
    if (g.reserved == u) slot = &g;
  if (slot == nullptr)
    for (auto& g : gathered_)
      if (g.reserved < 0 && g.unit < 0) {
        slot = &g;
        break;
      }
  ZT_CHECK(slot != nullptr, "no free slot to gather unit {}", u);
  slot->pending.wait();  // a dropped prefetch may still be landing
  slot->unit = u;
  const auto& pu = unit(u);
  Tensor in = typed(shard_params_, pu.shard_offset, pu.part_len, working_);
  Tensor out = typed(slot->buffer, 0, pu.padded_len, working_);
  slot->pending = dp_.all_gather_async(in, out);
  return *slot;
}

void PartitionedStates::prefetch_after(int u) {
  if (!trace_valid_) return;
  if (trace_pos_ >= trace_.size() || trace_[trace_pos_] != u) {
    trace_valid_ = false;  // the model changed its order: stop guessing
    for (auto& g : gathered_) g.prefetched = false;
    return;
  }
  // The next unit the model will ask for that it does not hold now: gathered ahead, into a free
  // slot, only if its acquire would gather it anyway (so prefetching never adds traffic).
  for (size_t i = trace_pos_ + 1; i < trace_.size(); ++i) {
    const int next = trace_[i];
    const Gathered* g = find_gathered(next);
    if (g != nullptr && g->held > 0) continue;
    if (g != nullptr) return;
    for (const auto& s : gathered_)
      if (s.reserved == next) return;  // persistent: gathered once per step on first use
    for (auto& s : gathered_)
      if (s.reserved < 0 && s.unit < 0) {
        start_gather(next).prefetched = true;
        return;
      }
    return;
  }
}

CRef PartitionedStates::acquire(const Span& s) {
  const int64_t off = layout_offset(s);
  if (zero_.stage != 3) return {at(full_params_.data(), working_, part_.padded_of(off)), working_};
  const int u = part_.unit_of(off);
  // A released unit's copy lives until another unit is acquired: only the rank's shard stays
  // resident, and a pass reaches each unit in one run, so it is gathered once per pass.
  for (auto& g : gathered_)
    if (g.reserved < 0 && g.unit >= 0 && g.unit != u && g.held == 0 && !g.prefetched) g.unit = -1;
  Gathered* g = find_gathered(u);
  if (g == nullptr) g = &start_gather(u);
  g->pending.wait();
  g->prefetched = false;
  ++g->held;
  if (recording_) trace_.push_back(u);
  prefetch_after(u);
  ++trace_pos_;
  return {at(g->buffer.data(), working_, off - unit(u).layout_begin), working_};
}

void PartitionedStates::release(const Span& s) {
  if (zero_.stage != 3) return;
  Gathered* g = find_gathered(part_.unit_of(layout_offset(s)));
  ZT_CHECK(g != nullptr && g->held > 0, "release of a span that is not held");
  --g->held;
}

// ---- gradients --------------------------------------------------------------------------------

float* PartitionedStates::open_grads(const Span& s) {
  if (zero_.stage == 1 && !half())
    return static_cast<float*>(full_grads_.data()) + part_.padded_of(layout_offset(s));
  return staging_.open(s);
}

void PartitionedStates::close_grads(const Span& s) {
  const int64_t off = layout_offset(s);
  const int u = part_.unit_of(off);
  const auto& pu = unit(u);
  ZT_CHECK(off + s.len <= pu.layout_begin + pu.real_len, "gradient span crosses a unit");
  if (zero_.stage == 1) {
    if (half())
      accumulate_f32(be_, at(full_grads_.data(), working_, part_.padded_of(off)), working_,
                     staging_.find(s), s.len);
  } else {
    Reduction& r = filling(u);
    from_f32(be_, at(r.input.data(), working_, off - pu.layout_begin), working_, staging_.find(s),
             s.len);
  }
  if (zero_.stage >= 2 || half()) staging_.close(s);
  int64_t& left = unit_pending_[static_cast<size_t>(u)];
  left -= s.len;
  ZT_CHECK(left >= 0, "unit {}: gradient elements closed twice", u);
  if (left > 0) return;
  left = pu.real_len;
  if (zero_.stage == 1) {
    if (last_microbatch_ && zero_.overlap_comm) launch_stage1(u);
    return;
  }
  launch(reductions_[static_cast<size_t>(unit_fill_[static_cast<size_t>(u)])]);
}

PartitionedStates::Reduction& PartitionedStates::filling(int u) {
  if (const int i = unit_fill_[static_cast<size_t>(u)]; i >= 0)
    return reductions_[static_cast<size_t>(i)];
  Reduction* r = nullptr;
  for (auto& x : reductions_)
    if (x.state == Fill::Free) r = &x;
  if (r == nullptr) {  // all busy: wait for the oldest reduction in flight
    for (auto& x : reductions_)
      if (x.state == Fill::InFlight && (r == nullptr || x.order < r->order)) r = &x;
    ZT_CHECK(r != nullptr, "more than {} gradient units filling at once", kReductions);
    complete(*r);
  }
  const auto& pu = unit(u);
  if (pu.padded_len > pu.real_len)  // the padding reduces as zeros
    be_.fill_zero(at(r->input.data(), working_, pu.real_len),
                  static_cast<size_t>(pu.padded_len - pu.real_len) * dtype_size(working_));
  r->unit = u;
  r->state = Fill::Filling;
  unit_fill_[static_cast<size_t>(u)] = static_cast<int>(r - reductions_.data());
  return *r;
}

void PartitionedStates::launch(Reduction& r) {
  const auto& u = unit(r.unit);
  unit_fill_[static_cast<size_t>(r.unit)] = -1;
  r.state = Fill::InFlight;
  r.order = ++launches_;
  r.launched = Clock::now();
  r.handle = dp_.reduce_scatter_async(typed(r.input, 0, u.padded_len, working_),
                                      typed(r.output, 0, u.part_len, working_));
  if (!zero_.overlap_comm) complete(r);
}

void PartitionedStates::complete(Reduction& r) {
  const auto t0 = Clock::now();
  r.handle.wait();
  const auto t1 = Clock::now();
  comm_ms_ += ms_between(r.launched, t1);
  hidden_ms_ += ms_between(r.launched, t1) - ms_between(t0, t1);
  const auto& u = unit(r.unit);
  auto* tmp = static_cast<float*>(f32_chunk_.data());
  to_f32(be_, tmp, r.output.data(), working_, u.part_len);
  accumulate_f32(be_, at(shard_grads_.data(), working_, u.shard_offset), working_, tmp, u.part_len);
  r.unit = -1;
  r.state = Fill::Free;
}

void PartitionedStates::launch_stage1(int k) {
  const auto i = static_cast<size_t>(k);
  if (stage1_launched_[i]) return;
  // At most kReductions in flight: each half one holds an fp32 staging copy in the communicator.
  if (stage1_order_.size() - stage1_waited_ >= static_cast<size_t>(kReductions))
    stage1_handles_[static_cast<size_t>(stage1_order_[stage1_waited_++])].wait();
  const auto& u = unit(k);
  stage1_launched_[i] = 1;
  stage1_times_[i] = Clock::now();
  stage1_order_.push_back(k);
  // In place: the own part of the summed gradient lands where the rank's own part already is.
  Tensor in = typed(full_grads_, u.padded_begin, u.padded_len, working_);
  stage1_handles_[i] =
      dp_.reduce_scatter_async(in, in.slice(dp_.rank() * u.part_len, {u.part_len}));
}

void PartitionedStates::finish_reductions() {
  const auto backward_end = Clock::now();
  double exposed = 0;
  if (zero_.stage == 1) {
    for (int k = 0; k < static_cast<int>(part_.units().size()); ++k) launch_stage1(k);
    for (size_t i = 0; i < stage1_handles_.size(); ++i) {
      const bool was_done = stage1_handles_[i].test();
      const auto t0 = Clock::now();
      stage1_handles_[i].wait();
      const auto t1 = Clock::now();
      exposed += ms_between(t0, t1);
      comm_ms_ += ms_between(stage1_times_[i], was_done ? backward_end : t1);
      hidden_ms_ +=
          ms_between(stage1_times_[i], std::min(backward_end, was_done ? backward_end : t1));
      stage1_launched_[i] = 0;
    }
    stage1_order_.clear();
    stage1_waited_ = 0;
  } else {
    for (auto& r : reductions_) {
      ZT_CHECK(r.state != Fill::Filling, "unit {}: gradient incomplete at the step", r.unit);
      if (r.state != Fill::InFlight) continue;
      const auto t0 = Clock::now();
      complete(r);
      exposed += ms_between(t0, Clock::now());
    }
  }
  timing_ = GradSyncTiming{};
  timing_.buckets = static_cast<int>(part_.units().size());
  timing_.comm_ms = comm_ms_;
  timing_.exposed_ms = exposed;
  timing_.hidden_fraction = comm_ms_ > 0 ? std::clamp(hidden_ms_ / comm_ms_, 0.0, 1.0) : 0;
  comm_ms_ = hidden_ms_ = 0;
}

void PartitionedStates::zero_grad() {
  if (full_grads_.data() != nullptr) be_.fill_zero(full_grads_.data(), full_grads_.bytes());
  if (shard_grads_.data() != nullptr) be_.fill_zero(shard_grads_.data(), shard_grads_.bytes());
  trace_pos_ = 0;
}

void PartitionedStates::begin_microbatch(bool last) {
  last_microbatch_ = last;
}

// ---- optimizer step ---------------------------------------------------------------------------

const void* PartitionedStates::shard_grad(const ShardSegment& s) const {
  if (zero_.stage == 1)
    return at(full_grads_.data(), working_, part_.padded_of_shard(s.unit, s.shard_offset));
  return at(shard_grads_.data(), working_, s.shard_offset);
}

void PartitionedStates::all_gather_updated_params() {
  // Each rank's updated part already sits in place in the padded full buffer; all-gather unit by
  // unit with at most --allgather-bucket-size elements in flight.
  std::vector<comm::Handle> inflight;
  int64_t inflight_elems = 0;
  for (const auto& u : part_.units()) {
    if (inflight_elems + u.padded_len > zero_.allgather_bucket_elems && !inflight.empty()) {
      for (auto& h : inflight) h.wait();
      inflight.clear();
      inflight_elems = 0;
    }
    inflight.push_back(
        dp_.all_gather_async(typed(full_params_, u.padded_begin, u.padded_len, working_)));
    inflight_elems += u.padded_len;
  }
  for (auto& h : inflight) h.wait();
}

StepResult PartitionedStates::step(double lr, double loss_scale) {
  finish_reductions();
  if (recording_ && zero_.stage == 3) {
    recording_ = false;  // the first step's acquire order drives prefetching from now on
    trace_valid_ = true;
  }
  const auto& params = layout_.params();
  double local = 0;
  for (const auto& s : part_.segments())
    if (!params[static_cast<size_t>(s.param)].tp_replicated || zero_.tp_rank == 0)
      local += sum_squares(be_, shard_grad(s), working_, s.len);
  const AdamStep a =
      prepare_adam_step(adam_, global_sum(norm_.get(), local), lr, loss_scale, adam_step_ + 1);
  StepResult r{a.grad_norm, !a.finite};
  if (r.skipped) return r;
  ++adam_step_;
  cpu::AdamWParams p = a.params;
  float* master = master_.view({part_.shard_numel()}, DType::F32).f32();
  float* m = m_.view({part_.shard_numel()}, DType::F32).f32();
  float* v = v_.view({part_.shard_numel()}, DType::F32).f32();
  auto* g32 = static_cast<float*>(f32_chunk_.data());
  const int64_t chunk = static_cast<int64_t>(f32_chunk_.bytes() / 4);
  for (const auto& s : part_.segments()) {
    p.weight_decay = params[static_cast<size_t>(s.param)].weight_decay
                         ? static_cast<float>(adam_.weight_decay)
                         : 0.0f;
    const void* g = shard_grad(s);
    for (int64_t i = s.shard_offset; i < s.shard_offset + s.len; i += chunk) {
      const int64_t len = std::min(chunk, s.shard_offset + s.len - i);
      to_f32(be_, g32, at(g, working_, i - s.shard_offset), working_, len);
      be_.adamw(master + i, m + i, v + i, g32, len, p);
    }
  }
  if (zero_.stage == 3) {
    from_f32(be_, shard_params_.data(), working_, master, part_.shard_numel());
    for (auto& g : gathered_) g.unit = -1;  // every gathered copy is stale now
    return r;
  }
  const int rank = dp_.rank();
  for (const auto& u : part_.units())
    from_f32(be_, at(full_params_.data(), working_, u.padded_begin + int64_t{rank} * u.part_len),
             working_, master + u.shard_offset, u.part_len);
  all_gather_updated_params();
  return r;
}

}  // namespace zt
