#include "src/zero/gathered_params.h"

#include "src/model/param_ref.h"
#include "src/zero/precision.h"

namespace zt {
namespace {

std::vector<char> persistent_units(const ParamLayout& layout, const Partition& part,
                                   int64_t threshold) {
  std::vector<char> p;
  for (const auto& u : part.units())
    p.push_back(layout.blocks()[static_cast<size_t>(u.block)].numel() <= threshold ? 1 : 0);
  return p;
}

std::vector<int64_t> unit_elems(const Partition& part) {
  std::vector<int64_t> e;
  for (const auto& u : part.units()) e.push_back(u.padded_len);
  return e;
}

}  // namespace

GatheredParams::GatheredParams(const ParamLayout& layout, const Partition& part, DType working,
                               const DeviceContext& ctx, comm::Communicator& dp,
                               int64_t persistence_threshold, const PrefetchLimits& limits)
    : layout_(layout),
      part_(part),
      working_(working),
      be_(ctx.backend()),
      dp_(dp),
      persistent_(persistent_units(layout, part, persistence_threshold)),
      policy_(unit_elems(part), persistent_, part.max_unit(), limits) {
  MemoryPool& pool = ctx.pool();
  shard_ = pool.allocate({part_.shard_numel()}, working_, MemCategory::Params);
  where_.assign(part_.units().size(), -1);
  for (size_t k = 0; k < part_.units().size(); ++k) {
    if (!persistent_[k]) continue;
    Slot s;
    s.buffer = pool.allocate({part_.units()[k].padded_len}, working_, MemCategory::Buffers);
    s.unit = static_cast<int>(k);
    where_[k] = static_cast<int>(kept_.size());
    kept_.push_back(std::move(s));
  }
  // Allocated once: the policy never has more shared units gathered than slots.
  for (int i = 0; i < policy_.slots(); ++i) {
    Slot s;
    s.buffer = pool.allocate({part_.max_unit()}, working_, MemCategory::Buffers);
    shared_.push_back(std::move(s));
  }
  stats_.slots = policy_.slots();
  stats_.slot_elems = part_.max_unit();
}

GatheredParams::~GatheredParams() {
  for (auto& s : shared_) s.pending = comm::Handle();
  for (auto& s : kept_) s.pending = comm::Handle();
}

GatheredParams::Slot& GatheredParams::slot_of(int u) {
  const int w = where_[static_cast<size_t>(u)];
  ZT_CHECK(w >= 0, "unit {} is not gathered", u);
  return persistent_[static_cast<size_t>(u)] ? kept_[static_cast<size_t>(w)]
                                             : shared_[static_cast<size_t>(w)];
}

void GatheredParams::start_gather(int u, bool ahead) {
  const auto k = static_cast<size_t>(u);
  Slot* slot = nullptr;
  if (persistent_[k]) {
    slot = &kept_[static_cast<size_t>(where_[k])];
  } else {
    for (size_t i = 0; i < shared_.size() && slot == nullptr; ++i)
      if (shared_[i].unit < 0) {
        slot = &shared_[i];
        where_[k] = static_cast<int>(i);
      }
    ZT_CHECK(slot != nullptr, "no free slot to gather unit {}", u);
    slot->unit = u;
    ++stats_.gathers;
  }
  slot->pending.wait();  // a dropped gather may still be landing
  slot->ahead = ahead;
  slot->logged = false;
  const auto& pu = part_.units()[k];
  Tensor in = shard_.view({part_.shard_numel()}, working_).slice(pu.shard_offset, {pu.part_len});
  Tensor out = slot->buffer.view({pu.padded_len}, working_);
  slot->pending = dp_.all_gather_async(in, out);
  // What the shared buffers hold now, measured on them.
  int ahead_units = 0;
  int64_t live = 0;
  for (const auto& s : shared_) {
    if (s.unit < 0) continue;
    live += part_.units()[static_cast<size_t>(s.unit)].padded_len;
    ahead_units += s.ahead ? 1 : 0;
  }
  stats_.max_ahead_units = std::max(stats_.max_ahead_units, ahead_units);
  stats_.peak_live_elems = std::max(stats_.peak_live_elems, live);
}

void GatheredParams::wait_needed(Slot& s) {
  // Compute needs the unit now: what ran of its gather before this point was hidden.
  comm::StampRef needed = s.logged ? nullptr : dp_.stamp();
  s.pending.wait();
  if (s.logged) return;
  log_.add(s.pending, std::move(needed));
  s.logged = true;
}

void GatheredParams::poll() {
  // Progress for gathers in flight behind compute (the manual progress mode), and their
  // completion seen as it happens rather than at the wait.
  for (auto& s : shared_)
    if (s.ahead && !s.pending.done()) (void)s.pending.test();
}

CRef GatheredParams::acquire(const Span& s) {
  const int64_t off = layout_offset(layout_, s);
  const int u = part_.unit_of(off);
  if (recording_) stats_.first_step.push_back({u, true});
  const PrefetchPolicy::Actions a = policy_.acquire(u);
  for (int f : a.freed) {
    Slot& x = slot_of(f);
    x.pending.wait();
    x.unit = -1;
    x.ahead = false;
    where_[static_cast<size_t>(f)] = -1;
  }
  if (a.demand >= 0) start_gather(a.demand, false);
  Slot& slot = slot_of(u);
  wait_needed(slot);
  slot.ahead = false;
  for (int v : a.prefetch) start_gather(v, true);
  poll();
  return {
      at(slot.buffer.data(), working_, off - part_.units()[static_cast<size_t>(u)].layout_begin),
      working_};
}

void GatheredParams::release(const Span& s) {
  const int u = part_.unit_of(layout_offset(layout_, s));
  if (recording_) stats_.first_step.push_back({u, false});
  policy_.release(u);
  poll();
}

void GatheredParams::from_master(const float* master) {
  from_master_range(0, part_.shard_numel(), master);
  finish_from_master();
}

void GatheredParams::from_master_range(int64_t shard_offset, int64_t len, const float* master) {
  from_f32(be_, at(shard_.data(), working_, shard_offset), working_, master, len);
}

void GatheredParams::finish_from_master() {
  // Every gathered copy is stale now.
  for (auto& s : shared_) {
    s.pending.wait();
    if (s.unit >= 0) where_[static_cast<size_t>(s.unit)] = -1;
    s.unit = -1;
    s.ahead = false;
  }
  for (auto& s : kept_) s.pending.wait();
  policy_.invalidate();
}

void GatheredParams::begin_step() {
  policy_.begin_step();
  recording_ = !recorded_;
  log_.clear(dp_.stamp());
}

void GatheredParams::end_step() {
  policy_.end_step();
  recorded_ = recorded_ || recording_;
  recording_ = false;
}

}  // namespace zt
