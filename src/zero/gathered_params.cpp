#include "src/zero/gathered_params.h"

#include <algorithm>

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

std::vector<int64_t> GatheredParams::slot_parts(const ParamLayout& layout, const Partition& part,
                                                int64_t persistence_threshold,
                                                const PrefetchLimits& limits) {
  const std::vector<char> persistent = persistent_units(layout, part, persistence_threshold);
  int shared = 0;
  int64_t largest = 0;
  for (size_t k = 0; k < part.units().size(); ++k)
    if (!persistent[k]) {
      ++shared;
      largest = std::max(largest, part.units()[k].part_len);
    }
  std::vector<int64_t> parts(static_cast<size_t>(gathered_slots(shared, part.max_unit(), limits)),
                             largest);
  for (size_t k = 0; k < part.units().size(); ++k)
    if (persistent[k]) parts.push_back(part.units()[k].part_len);
  return parts;
}

GatheredParams::GatheredParams(const ParamLayout& layout, const Partition& part, DType working,
                               const DeviceContext& ctx, const UnitGroups& groups,
                               int64_t persistence_threshold, const PrefetchLimits& limits,
                               const StateTierConfig& tier)
    : layout_(layout),
      part_(part),
      working_(working),
      be_(ctx.backend()),
      dp_(groups.dp()),
      groups_(groups),
      persistent_(persistent_units(layout, part, persistence_threshold)),
      policy_(unit_elems(part), persistent_, part.max_unit(), limits) {
  MemoryPool& pool = ctx.pool();
  shard_ = make_param_shard(tier, part_, working_, ctx,
                            slot_parts(layout, part, persistence_threshold, limits));
  where_.assign(part_.units().size(), -1);
  for (size_t k = 0; k < part_.units().size(); ++k) {
    if (!persistent_[k]) continue;
    Slot s;
    s.buffer = pool.allocate({part_.units()[k].padded_len}, working_, MemCategory::Buffers);
    s.unit = static_cast<int>(k);
    s.id = policy_.slots() + static_cast<int>(kept_.size());
    where_[k] = static_cast<int>(kept_.size());
    kept_.push_back(std::move(s));
  }
  // Allocated once: the policy never has more shared units gathered than slots.
  for (int i = 0; i < policy_.slots(); ++i) {
    Slot s;
    s.buffer = pool.allocate({part_.max_unit()}, working_, MemCategory::Buffers);
    s.id = i;
    shared_.push_back(std::move(s));
  }
  stats_.slots = policy_.slots();
  stats_.slot_elems = part_.max_unit();
}

GatheredParams::~GatheredParams() {
  for (auto& s : shared_) s.pending = comm::Handle();
  for (auto& s : kept_) s.pending = comm::Handle();
  // Reads still in flight into the shard's buffers: the shard waits for them as it goes.
}

void GatheredParams::settle(Slot& s) {
  if (!s.fetching) return;
  shard_->cancel_fetch(s.id);
  s.fetching = false;
  const auto it = std::find(fetching_.begin(), fetching_.end(), &s);
  ZT_CHECK(it != fetching_.end(), "slot {} is fetching but not queued", s.id);
  fetching_.erase(it);
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
  settle(*slot);
  slot->ahead = ahead;
  slot->logged = false;
  shard_->begin_fetch(u, slot->id);
  slot->fetching = true;
  slot->asked_at = calls_;
  fetching_.push_back(slot);
  // A unit needed now, or any unit of a shard on the device: gathered at once; otherwise at
  // the next acquire or release (poll).
  if (!ahead || shard_->tier() == StateTier::Device) launch_through(*slot);
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

void GatheredParams::launch_through(const Slot& s) {
  while (s.fetching) launch_oldest();
}

void GatheredParams::launch_oldest() {
  Slot* f = fetching_.front();
  fetching_.pop_front();
  launch_gather(*f);
}

void GatheredParams::launch_gather(Slot& s) {
  const auto& pu = part_.units()[static_cast<size_t>(s.unit)];
  Tensor in = shard_->part(s.unit, s.id);
  s.fetching = false;
  s.pending = groups_.of(pu).all_gather_async(in, s.buffer.view({pu.padded_len}, working_));
}

void GatheredParams::wait_needed(Slot& s) {
  launch_through(s);
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
  // The oldest fetch, if asked for in an earlier call: gathered now (waiting for its read if it
  // is not in). One per call, so the later ones' reads run on behind the compute; the queue is
  // in the order the model will need the units.
  if (!fetching_.empty() && fetching_.front()->asked_at < calls_) launch_oldest();
  for (auto& s : shared_)
    if (s.ahead && !s.fetching && !s.pending.done()) (void)s.pending.test();
}

CRef GatheredParams::acquire(const Span& s) {
  ++calls_;
  const int64_t off = layout_offset(layout_, s);
  const int u = part_.unit_of(off);
  if (recording_) stats_.first_step.push_back({u, true});
  const PrefetchPolicy::Actions a = policy_.acquire(u);
  for (int f : a.freed) {
    Slot& x = slot_of(f);
    x.pending.wait();
    settle(x);
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
  ++calls_;
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
  shard_->write(shard_offset, len, master);
}

void GatheredParams::from_host_range(int64_t shard_offset, int64_t len, const void* host) {
  shard_->write_host(shard_offset, len, host);
}

void GatheredParams::finish_from_master() {
  shard_->finish_write();
  // Every gathered copy is stale now.
  for (auto& s : shared_) {
    s.pending.wait();
    settle(s);
    if (s.unit >= 0) where_[static_cast<size_t>(s.unit)] = -1;
    s.unit = -1;
    s.ahead = false;
  }
  for (auto& s : kept_) {
    s.pending.wait();
    settle(s);
  }
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
