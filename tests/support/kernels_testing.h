#pragma once
// Shared helpers of the kernel tests (unit kernels_*_test and the CUDA kernel tests): random
// data, a double-precision central finite difference, an element-wise closeness check that
// reports the worst element, and bit equality.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <type_traits>
#include <vector>

#include "src/core/half.h"

namespace zt::testing {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// d/dx_i of f(x) for every i, central differences in double: error O(h^2) + O(eps/h).
inline std::vector<double> finite_diff(const std::function<double(const std::vector<double>&)>& f,
                                       std::vector<double> x, double h = 1e-5) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f(x);
    x[i] = x0 - h;
    const double fm = f(x);
    x[i] = x0;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

// Every |got - want| <= atol + rtol * |want|; on failure names the worst element.
template <typename A, typename B>
::testing::AssertionResult all_close(const A& got, const B& want, double rtol, double atol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  size_t worst = 0, bad = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    const double lim = atol + rtol * std::fabs(w);
    const double err = std::fabs(g - w);
    if (!(err <= lim)) {
      ++bad;
      const double excess = std::isnan(err) ? 1e300 : err - lim;
      if (excess > worst_excess) worst_excess = excess, worst = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << got.size() << " elements differ; worst [" << worst << "]: got "
         << static_cast<double>(got[worst]) << " want " << static_cast<double>(want[worst])
         << " (rtol " << rtol << ", atol " << atol << ")";
}

inline double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::fmax(m, std::fabs(x));
  return m;
}

// Bitwise equality; on failure names the first differing element (and its value, for floats).
template <typename T>
::testing::AssertionResult same_bits(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      auto failure = ::testing::AssertionFailure() << "first difference at element " << i;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, fp16>)
        failure << ": " << to_float(got[i]) << " vs " << to_float(want[i]);
      return failure;
    }
  return ::testing::AssertionSuccess();
}

template <typename T>
bool bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  // Empty vectors may have null data(), which memcmp must not see even for 0 bytes.
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

}  // namespace zt::testing
