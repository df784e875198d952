#include "src/zero/gathered_params.h"

#include "src/model/param_ref.h"
#include "src/zero/precision.h"

namespace zt {

GatheredParams::GatheredParams(const ParamLayout& layout, const Partition& part, DType working,
                               const DeviceContext& ctx, comm::Communicator& dp,
                               int64_t persistence_threshold)
    : layout_(layout), part_(part), working_(working), be_(ctx.backend()), dp_(dp) {
  MemoryPool& pool = ctx.pool();
  shard_ = pool.allocate({part_.shard_numel()}, working_, MemCategory::Params);
  bool shared = false;
  for (int k = 0; k < static_cast<int>(part_.units().size()); ++k) {
    const auto& u = part_.units()[static_cast<size_t>(k)];
    if (layout_.blocks()[static_cast<size_t>(u.block)].numel() > persistence_threshold) {
      shared = true;
      continue;
    }
    Slot s;
    s.buffer = pool.allocate({u.padded_len}, working_, MemCategory::Buffers);
    s.reserved = k;
    slots_.push_back(std::move(s));
  }
  for (int i = 0; shared && i < kSlots; ++i) {
    Slot s;
    s.buffer = pool.allocate({part_.max_unit()}, working_, MemCategory::Buffers);
    slots_.push_back(std::move(s));
  }
}

GatheredParams::~GatheredParams() {
  for (auto& s : slots_) s.pending = comm::Handle();
}

GatheredParams::Slot* GatheredParams::find(int u) {
  for (auto& s : slots_)
    if (s.unit == u) return &s;
  return nullptr;
}

GatheredParams::Slot& GatheredParams::start_gather(int u) {
  Slot* slot = nullptr;
  for (auto& s : slots_)  // a persistent slot reserved for this unit
    if (s.reserved == u) slot = &s;
  if (slot == nullptr)
    for (auto& s : slots_)
      if (s.reserved < 0 && s.unit < 0) {
        slot = &s;
        break;
      }
  ZT_CHECK(slot != nullptr, "no free slot to gather unit {}", u);
  slot->pending.wait();  // a dropped prefetch may still be landing
  slot->unit = u;
  slot->prefetched = false;
  const auto& pu = part_.units()[static_cast<size_t>(u)];
  Tensor in = shard_.view({part_.shard_numel()}, working_).slice(pu.shard_offset, {pu.part_len});
  Tensor out = slot->buffer.view({pu.padded_len}, working_);
  slot->pending = dp_.all_gather_async(in, out);
  return *slot;
}

void GatheredParams::prefetch_after(int u) {
  if (!trace_valid_) return;
  if (trace_pos_ >= trace_.size() || trace_[trace_pos_] != u) {
    trace_valid_ = false;  // the model changed its order: stop guessing
    for (auto& s : slots_) s.prefetched = false;
    return;
  }
  // The next unit the model will ask for that it does not hold now: gathered ahead into a free
  // slot, only if its acquire would gather it anyway (so prefetching never adds traffic).
  for (size_t i = trace_pos_ + 1; i < trace_.size(); ++i) {
    const int next = trace_[i];
    const Slot* have = find(next);
    if (have != nullptr && have->held > 0) continue;
    if (have != nullptr) return;
    for (const auto& s : slots_)
      if (s.reserved == next) return;  // persistent: gathered once per step on first use
    for (const auto& s : slots_)
      if (s.reserved < 0 && s.unit < 0) {
        start_gather(next).prefetched = true;
        return;
      }
    return;
  }
}

CRef GatheredParams::acquire(const Span& s) {
  const int64_t off = layout_offset(layout_, s);
  const int u = part_.unit_of(off);
  for (auto& x : slots_)  // released copies of other units go now
    if (x.reserved < 0 && x.unit >= 0 && x.unit != u && x.held == 0 && !x.prefetched) x.unit = -1;
  Slot* slot = find(u);
  if (slot == nullptr) slot = &start_gather(u);
  slot->pending.wait();
  slot->prefetched = false;
  ++slot->held;
  if (recording_) trace_.push_back(u);
  prefetch_after(u);
  ++trace_pos_;
  return {
      at(slot->buffer.data(), working_, off - part_.units()[static_cast<size_t>(u)].layout_begin),
      working_};
}

void GatheredParams::release(const Span& s) {
  Slot* slot = find(part_.unit_of(layout_offset(layout_, s)));
  ZT_CHECK(slot != nullptr && slot->held > 0, "release of a span that is not held");
  --slot->held;
}

void GatheredParams::from_master(const float* master) {
  from_f32(be_, shard_.data(), working_, master, part_.shard_numel());
  for (auto& s : slots_) {  // every gathered copy is stale now
    s.pending.wait();
    s.unit = -1;
    s.prefetched = false;
  }
}

void GatheredParams::end_step() {
  if (!recording_) return;
  recording_ = false;  // the first step's acquire order drives prefetching from now on
  trace_valid_ = true;
}

}  // namespace zt
