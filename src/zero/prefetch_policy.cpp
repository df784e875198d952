#include "src/zero/prefetch_policy.h"

#include <algorithm>

#include "src/core/error.h"

namespace zt {

int gathered_slots(int shared_units, int64_t max_unit, const PrefetchLimits& limits) {
  if (shared_units <= 0 || max_unit <= 0) return 0;
  const int64_t by_bucket = (limits.prefetch_bucket_elems + max_unit - 1) / max_unit;
  const int64_t room = limits.max_live_elems - 2 * max_unit;
  const int64_t by_live = room > 0 ? room / max_unit : 0;
  const int64_t prefetch = std::max<int64_t>(0, std::min(by_bucket, by_live));
  return static_cast<int>(std::min<int64_t>(shared_units, 2 + prefetch));
}

PrefetchPolicy::PrefetchPolicy(std::vector<int64_t> unit_elems, std::vector<char> persistent,
                               int64_t max_unit, const PrefetchLimits& limits)
    : elems_(std::move(unit_elems)),
      persistent_(std::move(persistent)),
      max_unit_(max_unit),
      limits_(limits) {
  ZT_CHECK(elems_.size() == persistent_.size(), "prefetch policy: {} unit sizes, {} flags",
           elems_.size(), persistent_.size());
  int shared = 0;
  for (char p : persistent_) shared += p ? 0 : 1;
  slots_ = gathered_slots(shared, max_unit_, limits_);
  prefetch_slots_ = std::max(0, slots_ - 2);
  state_.assign(elems_.size(), State::Absent);
  held_.assign(elems_.size(), 0);
}

void PrefetchPolicy::gather(int u, State s) {
  const auto i = static_cast<size_t>(u);
  state_[i] = s;
  if (persistent_[i]) return;
  ++gathers_;
  ++resident_;
  live_ += elems_[i];
  peak_live_ = std::max(peak_live_, live_);
  if (s == State::Ahead) {
    ++ahead_;
    ahead_elems_ += elems_[i];
    max_ahead_ = std::max(max_ahead_, ahead_);
  }
}

void PrefetchPolicy::drop(int u, std::vector<int>& freed) {
  const auto i = static_cast<size_t>(u);
  if (state_[i] == State::Ahead) {
    --ahead_;
    ahead_elems_ -= elems_[i];
  }
  state_[i] = State::Absent;
  --resident_;
  live_ -= elems_[i];
  freed.push_back(u);
}

PrefetchPolicy::Actions PrefetchPolicy::acquire(int u) {
  const auto i = static_cast<size_t>(u);
  ZT_CHECK(i < elems_.size(), "prefetch policy: unit {} of {}", u, elems_.size());
  Actions a;
  // Released copies of other units go now: each pass then gathers every unit once.
  for (size_t k = 0; k < elems_.size(); ++k)
    if (!persistent_[k] && state_[k] == State::Resident && held_[k] == 0 && k != i)
      drop(static_cast<int>(k), a.freed);
  if (in_step_ && !recorded_) {
    trace_.push_back(u);
  } else if (following_ && (pos_ >= trace_.size() || trace_[pos_] != u)) {
    // The model left the recorded order: no guessing until the next step; what was gathered
    // ahead is dropped once it is not needed (the next acquire).
    following_ = false;
    for (auto& s : state_)
      if (s == State::Ahead) s = State::Resident;
    ahead_ = 0;
    ahead_elems_ = 0;
  }
  if (state_[i] == State::Absent) {
    if (!persistent_[i] && resident_ >= slots_) {
      // Every slot taken by what is held and gathered ahead (only after a changed order): the
      // unit gathered ahead for the latest use gives its slot back.
      int victim = -1;
      for (size_t j = pos_; j < trace_.size() && recorded_; ++j) {
        const int v = trace_[j];
        if (state_[static_cast<size_t>(v)] == State::Ahead) victim = v;
      }
      for (size_t k = 0; victim < 0 && k < elems_.size(); ++k)
        if (!persistent_[k] && state_[k] != State::Absent && held_[k] == 0)
          victim = static_cast<int>(k);
      ZT_CHECK(victim >= 0, "stage 3: all {} gather slots held", slots_);
      drop(victim, a.freed);
    }
    gather(u, State::Resident);
    a.demand = u;
  } else if (state_[i] == State::Ahead) {
    state_[i] = State::Resident;
    --ahead_;
    ahead_elems_ -= elems_[i];
  }
  ++held_[i];
  if (following_) prefetch_from(pos_ + 1, a.prefetch);
  ++pos_;
  return a;
}

void PrefetchPolicy::prefetch_from(size_t pos, std::vector<int>& out) {
  // What is gathered ahead may hold the live bound less the two units the model may hold.
  const int64_t room = limits_.max_live_elems - 2 * max_unit_;
  for (size_t j = pos; j < trace_.size(); ++j) {
    const int v = trace_[j];
    const auto k = static_cast<size_t>(v);
    if (persistent_[k] || state_[k] != State::Absent) continue;
    if (ahead_elems_ >= limits_.prefetch_bucket_elems) return;  // DeepSpeed: while numel < bucket
    if (ahead_ >= prefetch_slots_ || resident_ >= slots_) return;
    if (ahead_elems_ + elems_[k] > room) return;  // in order: never skip to a smaller one
    gather(v, State::Ahead);
    out.push_back(v);
  }
}

void PrefetchPolicy::release(int u) {
  auto& h = held_.at(static_cast<size_t>(u));
  ZT_CHECK(h > 0, "prefetch policy: release of unit {}, which is not held", u);
  --h;
}

void PrefetchPolicy::begin_step() {
  pos_ = 0;
  in_step_ = true;
  following_ = recorded_ && !trace_.empty();
}

void PrefetchPolicy::end_step() {
  if (in_step_) recorded_ = true;
  in_step_ = false;
  following_ = false;  // acquires between steps (evaluation) are not in the order
}

void PrefetchPolicy::invalidate() {
  for (size_t k = 0; k < state_.size(); ++k) {
    ZT_CHECK(held_[k] == 0, "prefetch policy: unit {} still held", k);
    state_[k] = State::Absent;
  }
  resident_ = ahead_ = 0;
  live_ = ahead_elems_ = 0;
}

PrefetchSummary simulate_prefetch(const std::vector<UnitEvent>& step,
                                  const std::vector<int64_t>& unit_elems,
                                  const std::vector<char>& persistent, int64_t max_unit,
                                  const PrefetchLimits& limits, int steps) {
  PrefetchPolicy p(unit_elems, persistent, max_unit, limits);
  for (int s = 0; s < steps; ++s) {
    p.begin_step();
    for (const auto& e : step) {
      if (e.acquire)
        (void)p.acquire(e.unit);
      else
        p.release(e.unit);
    }
    p.end_step();
    p.invalidate();  // the optimizer step: new parameters
  }
  return {p.slots(), p.peak_live_elems(), p.max_ahead_units(), p.gathers()};
}

}  // namespace zt
