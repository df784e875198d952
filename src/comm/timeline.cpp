#include "src/comm/timeline.h"

#include <algorithm>

#include "src/comm/communicator.h"
#include "src/core/error.h"

namespace zt::comm {

double HostStamp::ms_since(const Stamp& origin) const {
  const auto* o = dynamic_cast<const HostStamp*>(&origin);
  ZT_CHECK(o != nullptr, "a host time compared with a device time");
  return std::chrono::duration<double, std::milli>(t_ - o->t_).count();
}

void OverlapLog::clear(StampRef origin) {
  origin_ = std::move(origin);
  ops_.clear();
  exposed_from_.reset();
  exposed_to_.reset();
}

void OverlapLog::add(const Handle& h, StampRef needed) {
  if (h.started() == nullptr || h.finished() == nullptr) return;  // nothing moved (one rank)
  ops_.push_back({h.started(), h.finished(), std::move(needed)});
}

void OverlapLog::set_exposed(StampRef from, StampRef to) {
  exposed_from_ = std::move(from);
  exposed_to_ = std::move(to);
}

OverlapTiming OverlapLog::read() const {
  OverlapTiming t;
  if (origin_ == nullptr) return t;
  auto at = [&](const StampRef& x) { return x->ms_since(*origin_); };
  if (exposed_from_ && exposed_to_)
    t.exposed_ms = std::max(0.0, at(exposed_to_) - at(exposed_from_));
  double hidden = 0;
  for (const Op& op : ops_) {
    const double start = at(op.start), len = std::max(0.0, at(op.end) - start);
    t.comm_ms += len;
    if (op.needed) hidden += std::clamp(at(op.needed) - start, 0.0, len);
  }
  t.hidden_fraction = t.comm_ms > 0 ? hidden / t.comm_ms : 0;
  return t;
}

void IntervalSum::add(StampRef from, StampRef to) {
  spans_.emplace_back(std::move(from), std::move(to));
}

double IntervalSum::ms() const {
  double ms = 0;
  for (const auto& [a, b] : spans_) ms += std::max(0.0, b->ms_since(*a));
  return ms;
}

}  // namespace zt::comm
