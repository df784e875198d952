#pragma once
// Exact reductions of a few doubles over a group (metrics, gradient norms), summed in rank order
// so every rank gets the same bits. Values travel as pairs of floats (hi + lo) through an
// all-gather: exact for integers below 2^47 and to ~48 bits for doubles. Use the world group for
// bookkeeping, so the dp/tp byte counters hold only training traffic. Over a group of one rank
// every value is already its own reduction: nothing is allocated, gathered or rounded.
#include <cstddef>
#include <span>

#include "src/comm/communicator.h"
#include "src/core/memory_pool.h"

namespace zt::comm {

class ScalarReducer {
 public:
  // mean, max and sum over the group of `values`, in place. Allocates bytes(world.size(),
  // max_values) from `pool` (category Buffers).
  ScalarReducer(Communicator& world, MemoryPool& pool, size_t max_values);
  // What a reducer of `max_values` over a group of `group_size` ranks allocates: every rank's
  // values as two fp32 words each; nothing for a group of one. The planner counts these bytes.
  static size_t bytes(int group_size, size_t max_values) {
    return group_size > 1 ? static_cast<size_t>(group_size) * max_values * 2 * sizeof(float) : 0;
  }
  // In place: each value becomes the mean (or max) over ranks, summed in rank order.
  void mean(std::span<double> values);
  void max(std::span<double> values);
  void sum(std::span<double> values);

 private:
  // Every rank's values into buffer_; false over a group of one (nothing to gather).
  bool gather(std::span<const double> values);
  Communicator& world_;
  Buffer buffer_;  // [world][max_values][2] floats; none for a group of one
  size_t max_values_;
};

}  // namespace zt::comm
