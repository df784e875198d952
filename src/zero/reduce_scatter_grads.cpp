#include "src/zero/reduce_scatter_grads.h"

#include <algorithm>

#include "src/model/param_ref.h"
#include "src/zero/precision.h"

namespace zt {
namespace {

Tensor typed(const Buffer& b, int64_t offset, int64_t n, DType t) {
  return b.view({offset + n}, t).slice(offset, {n});
}

// The unit holding span `s`, which must lie inside it.
int unit_of_span(const ParamLayout& layout, const Partition& part, const Span& s) {
  const int64_t off = layout_offset(layout, s);
  const int u = part.unit_of(off);
  const auto& pu = part.units()[static_cast<size_t>(u)];
  ZT_CHECK(off + s.len <= pu.layout_begin + pu.real_len, "gradient span crosses a unit");
  return u;
}

}  // namespace

// ---- stage 1 ----------------------------------------------------------------------------------

ReduceScatterAtStep::ReduceScatterAtStep(const ParamLayout& layout, const Partition& part,
                                         DType working, const DeviceContext& ctx,
                                         const UnitGroups& groups, int64_t span_elems, bool overlap)
    : layout_(layout),
      part_(part),
      working_(working),
      be_(ctx.backend()),
      dp_(groups.dp()),
      groups_(groups),
      overlap_(overlap) {
  grads_ = ctx.pool().allocate({part_.padded_numel()}, working_, MemCategory::Grads);
  if (half()) staging_ = GradStaging(ctx, layout_, span_elems);
  for (const auto& u : part_.units()) pending_.push_back(u.real_len);
  handles_.resize(part_.units().size());
  launched_.assign(part_.units().size(), 0);
}

void ReduceScatterAtStep::begin_microbatch(bool last) {
  last_microbatch_ = last;
  if (last) log_.clear(dp_.stamp());
}

float* ReduceScatterAtStep::open(const Span& s) {
  if (!half())
    return static_cast<float*>(grads_.data()) + part_.padded_of(layout_offset(layout_, s));
  return staging_.open(s);
}

void ReduceScatterAtStep::close(const Span& s) {
  for (size_t w = waited_; w < order_.size(); ++w)  // see ReduceScatterUnits::poll
    (void)handles_[static_cast<size_t>(order_[w])].test();
  const int u = unit_of_span(layout_, part_, s);
  if (half()) {
    accumulate_f32(be_, at(grads_.data(), working_, part_.padded_of(layout_offset(layout_, s))),
                   working_, staging_.find(s), s.len);
    staging_.close(s);
  }
  int64_t& left = pending_[static_cast<size_t>(u)];
  left -= s.len;
  ZT_CHECK(left >= 0, "unit {}: gradient elements closed twice", u);
  if (left > 0) return;
  left = part_.units()[static_cast<size_t>(u)].real_len;
  if (last_microbatch_ && overlap_) launch(u);
}

void ReduceScatterAtStep::launch(int k) {
  const auto i = static_cast<size_t>(k);
  if (launched_[i]) return;
  if (order_.size() - waited_ >= static_cast<size_t>(kInFlight)) {
    comm::StampRef needed = dp_.stamp();
    comm::Handle& h = handles_[static_cast<size_t>(order_[waited_++])];
    h.wait();
    log_.add(h, std::move(needed));
  }
  const auto& u = part_.units()[i];
  launched_[i] = 1;
  order_.push_back(k);
  Tensor in = typed(grads_, u.padded_begin, u.padded_len, working_);
  handles_[i] = groups_.of(u).reduce_scatter_async(in, in.slice(u.part * u.part_len, {u.part_len}));
}

void ReduceScatterAtStep::zero() {
  be_.fill_zero(grads_.data(), grads_.bytes());
}

Tensor ReduceScatterAtStep::local_grads(int64_t layout_offset, int64_t len) {
  return Tensor(at(grads_.data(), working_, part_.padded_of(layout_offset)), {len}, working_,
                be_.device());
}

void ReduceScatterAtStep::finish() {
  const comm::StampRef backward_end = dp_.stamp();
  for (int k = 0; k < static_cast<int>(part_.units().size()); ++k) launch(k);
  for (size_t w = waited_; w < order_.size(); ++w) {
    comm::Handle& h = handles_[static_cast<size_t>(order_[w])];
    h.wait();
    log_.add(h, backward_end);
  }
  std::fill(launched_.begin(), launched_.end(), 0);
  order_.clear();
  waited_ = 0;
  log_.set_exposed(backward_end, dp_.stamp());
}

GradSyncTiming ReduceScatterAtStep::timing() const {
  return GradSyncTiming::from(static_cast<int>(part_.units().size()), log_.read());
}

const void* ReduceScatterAtStep::grad(const ShardSegment& s) const {
  return at(grads_.data(), working_, part_.padded_of_shard(s.unit, s.shard_offset));
}

// ---- stages 2-3 -------------------------------------------------------------------------------

ReduceScatterUnits::ReduceScatterUnits(const ParamLayout& layout, const Partition& part,
                                       DType working, const DeviceContext& ctx,
                                       const UnitGroups& groups, int64_t span_elems, bool overlap,
                                       float* scratch, StateTier tier, const StateTierConfig& swap)
    : layout_(layout),
      part_(part),
      working_(working),
      be_(ctx.backend()),
      dp_(groups.dp()),
      groups_(groups),
      overlap_(overlap),
      scratch_(scratch),
      on_host_(tier != StateTier::Device) {
  MemoryPool& pool = ctx.pool();
  if (tier == StateTier::Nvme)
    swapped_.emplace(swap, part_, working_, ctx.host());
  else if (on_host_)
    shard_ = ctx.host().allocate({part_.shard_numel()}, working_, MemCategory::HostGrads);
  else
    shard_ = pool.allocate({part_.shard_numel()}, working_, MemCategory::Grads);
  staging_ = GradStaging(ctx, layout_, span_elems);
  for (const auto& u : part_.units()) pending_.push_back(u.real_len);
  fill_.assign(part_.units().size(), -1);
  const int64_t max_part = part_.max_part();
  if (on_host_) host_part_ = ctx.host().allocate({max_part}, DType::F32, MemCategory::Buffers);
  reductions_.resize(kReductions);
  for (auto& r : reductions_) {
    r.input = pool.allocate({part_.max_unit()}, working_, MemCategory::Buffers);
    r.output = pool.allocate({max_part}, working_, MemCategory::Buffers);
  }
}

ReduceScatterUnits::~ReduceScatterUnits() {
  for (auto& r : reductions_) r.handle = comm::Handle();
}

void ReduceScatterUnits::close(const Span& s) {
  poll();
  const int u = unit_of_span(layout_, part_, s);
  const auto& pu = part_.units()[static_cast<size_t>(u)];
  Reduction& r = filling(u);
  from_f32(be_, at(r.input.data(), working_, layout_offset(layout_, s) - pu.layout_begin), working_,
           staging_.find(s), s.len);
  staging_.close(s);
  int64_t& left = pending_[static_cast<size_t>(u)];
  left -= s.len;
  ZT_CHECK(left >= 0, "unit {}: gradient elements closed twice", u);
  if (left > 0) return;
  left = pu.real_len;
  launch(r);
}

void ReduceScatterUnits::poll() {
  // Between backward's chunks: drives the reductions in flight (the manual progress mode) and
  // takes each one's completion time when it is first seen complete, not when the step waits.
  for (auto& r : reductions_)
    if (r.state == Fill::InFlight) (void)r.handle.test();
}

ReduceScatterUnits::Reduction& ReduceScatterUnits::filling(int u) {
  if (const int i = fill_[static_cast<size_t>(u)]; i >= 0)
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
  const auto& pu = part_.units()[static_cast<size_t>(u)];
  if (pu.padded_len > pu.real_len)  // the padding reduces as zeros
    be_.fill_zero(at(r->input.data(), working_, pu.real_len),
                  static_cast<size_t>(pu.padded_len - pu.real_len) * dtype_size(working_));
  r->unit = u;
  r->state = Fill::Filling;
  fill_[static_cast<size_t>(u)] = static_cast<int>(r - reductions_.data());
  return *r;
}

void ReduceScatterUnits::launch(Reduction& r) {
  const auto& u = part_.units()[static_cast<size_t>(r.unit)];
  fill_[static_cast<size_t>(r.unit)] = -1;
  r.state = Fill::InFlight;
  r.order = ++launches_;
  r.handle = groups_.of(u).reduce_scatter_async(typed(r.input, 0, u.padded_len, working_),
                                                typed(r.output, 0, u.part_len, working_));
  if (!overlap_) complete(r);
}

void ReduceScatterUnits::complete(Reduction& r) {
  comm::StampRef needed = dp_.stamp();
  r.handle.wait();
  log_.add(r.handle, std::move(needed));
  const auto& u = part_.units()[static_cast<size_t>(r.unit)];
  if (on_host_) {
    // The part leaves the device on the side stream behind backward; the host adds it in at the
    // next completion or at the step, so the host waits for a copy only a unit later.
    land_host_part();
    to_f32(be_, scratch_, r.output.data(), working_, u.part_len);
    be_.offload(host_part_.data(), scratch_, static_cast<size_t>(u.part_len) * 4);
    landing_ = r.unit;
  } else {
    to_f32(be_, scratch_, r.output.data(), working_, u.part_len);
    accumulate_f32(be_, at(shard_.data(), working_, u.shard_offset), working_, scratch_,
                   u.part_len);
  }
  r.unit = -1;
  r.state = Fill::Free;
}

void ReduceScatterUnits::land_host_part() {
  if (landing_ < 0) return;
  // The copy is done, so scratch_ may be rewritten and host_part_ read.
  be_.wait_copies();
  const auto& u = part_.units()[static_cast<size_t>(landing_)];
  auto* h = static_cast<const float*>(host_part_.data());
  if (swapped_)
    swapped_->add(landing_, h);
  else
    accumulate_f32(cpu_backend(), at(shard_.data(), working_, u.shard_offset), working_, h,
                   u.part_len);
  landing_ = -1;
}

void ReduceScatterUnits::zero() {
  if (swapped_)
    swapped_->zero();
  else
    (on_host_ ? cpu_backend() : be_).fill_zero(shard_.data(), shard_.bytes());
  log_.clear(dp_.stamp());  // the step begins: every micro-batch's reductions count
}

void ReduceScatterUnits::finish() {
  const comm::StampRef backward_end = dp_.stamp();
  for (auto& r : reductions_) {
    ZT_CHECK(r.state != Fill::Filling, "unit {}: gradient incomplete at the step", r.unit);
    if (r.state == Fill::InFlight) complete(r);
  }
  land_host_part();
  log_.set_exposed(backward_end, dp_.stamp());
}

GradSyncTiming ReduceScatterUnits::timing() const {
  return GradSyncTiming::from(static_cast<int>(part_.units().size()), log_.read());
}

const void* ReduceScatterUnits::grad(const ShardSegment& s) const {
  ZT_CHECK(!swapped_, "the gradient shard is on the NVMe tier: read_grad, not grad");
  return at(shard_.data(), working_, s.shard_offset);
}

void ReduceScatterUnits::read_grad(int64_t offset, int64_t len, void* host) const {
  ZT_CHECK(swapped_.has_value(), "the gradient shard is in memory: grad, not read_grad");
  swapped_->read(offset, len, host);
}

}  // namespace zt
