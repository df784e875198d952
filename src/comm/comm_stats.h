#pragma once
// CommStats: calls, elements and bytes of every collective, per group kind and operation.
//
// Conventions (n = the op's element count, e = the tensor's element size in bytes, N = the
// group size):
//   op              elements   bytes (paper)   wire_bytes (ring algorithm, per rank)
//   all_reduce      n          2·n·e           2(N−1)/N·n·e
//   reduce_scatter  n (input)  n·e             (N−1)/N·n·e
//   all_gather      n (output) n·e             (N−1)/N·n·e
//   broadcast       n          n·e             n·e  (counted on every rank, root included)
//   send / recv     n          n·e             n·e
//   barrier         0          0               0
//   all_to_all      n (input)  (N−1)/N·n·e     (N−1)/N·n·e  (what leaves the rank)
//   all_to_all_v    n (input)  (n − own)·e     (n − own)·e  (counted as all_to_all; `own`: the
//                                                            rank's chunk to itself)
// "bytes" is the ZeRO paper's accounting (an all-reduce = reduce-scatter + all-gather = 2Ψ);
// "wire_bytes" is what a bandwidth-optimal ring sends per rank. Both use the tensor's own
// element size even where the MPI backend reduces half tensors in fp32 (communicator.h).
// A group of one rank moves nothing: its collectives count calls and elements, 0 bytes.
// Counting happens when an operation is issued, on the issuing thread (one thread issues
// collectives in zerotron; the counters are not atomic).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zt::comm {

// Ep and Edp: expert parallelism's groups inside the data × context group (topology.h).
enum class GroupKind : uint8_t { World, Tp, Dp, Pp, Mp, Cp, Ep, Edp, kCount };
constexpr size_t kNumGroupKinds = static_cast<size_t>(GroupKind::kCount);
std::string_view group_kind_name(GroupKind g);

enum class CommOp : uint8_t {
  AllReduce,
  ReduceScatter,
  AllGather,
  Broadcast,
  Send,
  Recv,
  Barrier,
  AllToAll,
  kCount
};
constexpr size_t kNumCommOps = static_cast<size_t>(CommOp::kCount);
std::string_view comm_op_name(CommOp op);

struct OpCounters {
  uint64_t calls = 0;
  uint64_t elements = 0;
  uint64_t bytes = 0;       // paper convention
  double wire_bytes = 0.0;  // ring algorithm; fractional because of the (N−1)/N factors

  OpCounters& operator+=(const OpCounters& o);
  OpCounters& operator-=(const OpCounters& o);
  friend OpCounters operator+(OpCounters a, const OpCounters& b) { return a += b; }
  friend OpCounters operator-(OpCounters a, const OpCounters& b) { return a -= b; }
  bool operator==(const OpCounters&) const = default;
};

// A copy of all counters at one moment; subtract two to get one step's traffic.
struct CommSnapshot {
  std::array<std::array<OpCounters, kNumCommOps>, kNumGroupKinds> ops{};

  const OpCounters& at(GroupKind g, CommOp op) const {
    return ops[static_cast<size_t>(g)][static_cast<size_t>(op)];
  }
  // Sum over the operations of one group kind.
  OpCounters group(GroupKind g) const;
  // Sum over everything.
  OpCounters total() const;
  CommSnapshot& operator-=(const CommSnapshot& o);
  friend CommSnapshot operator-(CommSnapshot a, const CommSnapshot& b) { return a -= b; }
  // {"dp":{"bytes":..,"wire_bytes":..,"calls":..,"all_reduce":{...},...},...} for metrics.
  std::string to_json() const;
};

// The paper's bytes and the ring wire bytes of one operation (the table above).
OpCounters op_cost(CommOp op, uint64_t elements, size_t elem_size, int group_size);

// all_to_all_v's: `elements` in the input, `leaving` of them to other ranks.
OpCounters all_to_all_v_cost(uint64_t elements, uint64_t leaving, size_t elem_size);
class CommStats {
 public:
  void record(GroupKind g, CommOp op, uint64_t elements, size_t elem_size, int group_size);
  // An operation whose cost is not a function of its size alone (all_to_all_v): one call.
  void record(GroupKind g, CommOp op, const OpCounters& cost);
  const CommSnapshot& snapshot() const { return now_; }
  void reset() { now_ = CommSnapshot{}; }

 private:
  CommSnapshot now_;
};

// Per-step reporting for the trainer: call begin_step() before a step, end_step() after; the
// difference is that step's traffic. Cheap (copies ~1 KB).
class StepCommMeter {
 public:
  explicit StepCommMeter(const CommStats& stats) : stats_(&stats), start_(stats.snapshot()) {}
  void begin_step() { start_ = stats_->snapshot(); }
  CommSnapshot end_step() const { return stats_->snapshot() - start_; }

 private:
  const CommStats* stats_;
  CommSnapshot start_;
};

}  // namespace zt::comm
