#pragma once
// Reductions of per-rank metrics over the world group (not dp/tp, whose byte counters are the
// paper's evidence and must hold only training traffic). Values travel as pairs of floats
// (hi + lo), exact for integers below 2^47 and to ~48 bits for doubles.
#include <cstddef>
#include <span>

#include "src/comm/communicator.h"
#include "src/core/memory_pool.h"

namespace zt {

class RankReducer {
 public:
  RankReducer(comm::Communicator& world, MemoryPool& pool, size_t max_values);
  // In place: each value becomes the mean (or max) over ranks, summed in rank order.
  void mean(std::span<double> values);
  void max(std::span<double> values);

 private:
  void gather(std::span<const double> values);
  comm::Communicator& world_;
  Buffer buffer_;  // [world][max_values][2] floats
  size_t max_values_;
};

}  // namespace zt
