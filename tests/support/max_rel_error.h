#pragma once
// The comparison the issues state for tensors: max |a - b| over max |b|.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace zt::test {

inline double max_rel_error(const float* a, const float* b, size_t n) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    ref = std::max(ref, std::abs(static_cast<double>(b[i])));
  }
  return diff / std::max(ref, 1e-30);
}

// The same over two vectors, `b` the reference (sizes must match).
inline double max_rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  return max_rel_error(a.data(), b.data(), b.size());
}

}  // namespace zt::test
