#pragma once
// Communication timed against the compute it should hide behind, on the timeline where both
// run. On the CPU backend (MpiCommunicator, SelfCommunicator) that is the host clock: an op is
// in flight from its call until its completion is seen (by the progress thread, test() or
// wait()), and compute is the calling thread's own work. On NCCL both are device work that the
// host only enqueues: a compute point is a CUDA event on the compute stream, an op runs between
// two events on its communicator's stream, and host times would measure only the enqueueing
// (wait() does not block the host there). Every place that reports overlap (the data-parallel
// gradient reducers, the pipeline's busy and waiting time) takes its points from
// Communicator::stamp() and Handle::started()/finished() and reads them through OverlapLog or
// IntervalSum after the step, when reading a device point no longer waits for anything.
#include <chrono>
#include <memory>
#include <vector>

namespace zt::comm {

class Handle;

// A point on one communicator's timeline.
class Stamp {
 public:
  virtual ~Stamp() = default;
  // Milliseconds from `origin` to this point, both of the same kind (may wait for the device).
  virtual double ms_since(const Stamp& origin) const = 0;
};
using StampRef = std::shared_ptr<const Stamp>;

class HostStamp final : public Stamp {
 public:
  using Clock = std::chrono::steady_clock;
  explicit HostStamp(Clock::time_point t) : t_(t) {}
  static StampRef now() { return std::make_shared<HostStamp>(Clock::now()); }
  static StampRef at(Clock::time_point t) { return std::make_shared<HostStamp>(t); }
  double ms_since(const Stamp& origin) const override;

 private:
  Clock::time_point t_;
};

// One step's communication against compute.
struct OverlapTiming {
  double comm_ms = 0;     // Σ over the ops of start to end
  double exposed_ms = 0;  // compute waiting for communication once the hiding compute ended
  // Σ over the ops of the part that ran before compute needed the result, / comm_ms.
  double hidden_fraction = 0;
};

class OverlapLog {
 public:
  // Starts a step: `origin` (a stamp taken before any op of the step is issued) is the point
  // every other one is measured from, so no difference read is negative (device times are
  // differences of events, taken from a common earlier event).
  void clear(StampRef origin);
  // A waited op (its handle after wait()): it ran from h.started() to h.finished(), and compute
  // reached the point that needs its result at `needed` (the stamp taken just before the wait).
  void add(const Handle& h, StampRef needed);
  // Compute finished its part at `from` and had all its communication at `to`.
  void set_exposed(StampRef from, StampRef to);
  OverlapTiming read() const;

 private:
  struct Op {
    StampRef start, end, needed;
  };
  std::vector<Op> ops_;
  StampRef origin_, exposed_from_, exposed_to_;
};

// A sum of intervals of one timeline (the pipeline's computing and waiting), each from a point to
// a later one, read after the step.
class IntervalSum {
 public:
  void clear() { spans_.clear(); }
  void add(StampRef from, StampRef to);
  double ms() const;

 private:
  std::vector<std::pair<StampRef, StampRef>> spans_;
};

}  // namespace zt::comm
