#include "src/comm/scalar_reducer.h"

#include <algorithm>

namespace zt::comm {

ScalarReducer::ScalarReducer(Communicator& world, MemoryPool& pool, size_t max_values)
    : world_(world), max_values_(max_values) {
  if (const size_t b = bytes(world.size(), max_values); b > 0)
    buffer_ = pool.allocate(b, MemCategory::Buffers);
}

bool ScalarReducer::gather(std::span<const double> values) {
  ZT_CHECK(values.size() <= max_values_, "{} values, room for {}", values.size(), max_values_);
  if (world_.size() == 1) return false;
  const auto n = static_cast<int64_t>(max_values_ * 2);
  Tensor all = buffer_.view({n * world_.size()}, DType::F32);
  float* mine = all.f32() + n * world_.rank();
  for (size_t i = 0; i < values.size(); ++i) {
    const float hi = static_cast<float>(values[i]);
    mine[2 * i] = hi;
    mine[2 * i + 1] = static_cast<float>(values[i] - static_cast<double>(hi));
  }
  world_.all_gather(all);
  return true;
}

void ScalarReducer::mean(std::span<double> values) {
  sum(values);
  for (double& v : values) v /= world_.size();
}

void ScalarReducer::sum(std::span<double> values) {
  if (!gather(values)) return;
  const float* all = static_cast<const float*>(buffer_.data());
  const auto n = max_values_ * 2;
  for (size_t i = 0; i < values.size(); ++i) {
    double sum = 0;
    for (int r = 0; r < world_.size(); ++r)
      sum += double{all[r * n + 2 * i]} + double{all[r * n + 2 * i + 1]};
    values[i] = sum;
  }
}

void ScalarReducer::max(std::span<double> values) {
  if (!gather(values)) return;
  const float* all = static_cast<const float*>(buffer_.data());
  const auto n = max_values_ * 2;
  for (size_t i = 0; i < values.size(); ++i) {
    double m = -1e300;
    for (int r = 0; r < world_.size(); ++r)
      m = std::max(m, double{all[r * n + 2 * i]} + double{all[r * n + 2 * i + 1]});
    values[i] = m;
  }
}

}  // namespace zt::comm
