// sum_squares (double accumulation) and has_inf_or_nan, for fp32, bf16 and fp16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/core/half.h"
#include "tests/support/half_vectors.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

template <typename T>
long double ref_sum_squares(const std::vector<T>& x) {
  long double s = 0;
  for (const T& e : x) s += static_cast<long double>(to_float(e)) * to_float(e);
  return s;
}

template <typename T>
class KernelsReduce : public ::testing::Test {};
using Types = ::testing::Types<float, bf16, fp16>;
TYPED_TEST_SUITE(KernelsReduce, Types);

TYPED_TEST(KernelsReduce, SumSquaresInDouble) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{64}, int64_t{100003}}) {
    auto x = test::narrow<TypeParam>(testing::random_floats(n, 11, -3, 3));
    const long double want = ref_sum_squares(x);
    const double got = cpu::Kernels::sum_squares(x.data(), n);
    EXPECT_NEAR(got, static_cast<double>(want), 1e-13 * static_cast<double>(want)) << n;
  }
  // Double accumulation: 2^24 + many ones is not lost as it would be in float.
  std::vector<float> big(70000, 1.0f);
  big[0] = 4096.0f;  // 4096^2 = 2^24
  auto x = test::narrow<TypeParam>(big);
  EXPECT_EQ(cpu::Kernels::sum_squares(x.data(), 70000), 16777216.0 + 69999.0);
}

TYPED_TEST(KernelsReduce, HasInfOrNan) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float maxf = std::is_same_v<TypeParam, fp16> ? 65504.0f : 3.0e38f;
  for (int64_t n : {int64_t{1}, int64_t{33}, int64_t{100003}}) {
    auto base = testing::random_floats(n, 12, -2, 2);
    base[0] = maxf;
    base[size_t(n - 1)] = -maxf;
    auto x = test::narrow<TypeParam>(base);
    EXPECT_FALSE(cpu::Kernels::has_inf_or_nan(x.data(), n)) << n;
    for (int64_t pos : {int64_t{0}, n / 2, n - 1})
      for (float bad : {inf, -inf, nan}) {
        auto y = x;
        y[size_t(pos)] = from_float<TypeParam>(bad);
        EXPECT_TRUE(cpu::Kernels::has_inf_or_nan(y.data(), n)) << n << " " << pos << " " << bad;
      }
  }
  if constexpr (std::is_same_v<TypeParam, fp16>) {
    std::vector<fp16> y{to_fp16(1.0f), to_fp16(70000.0f)};  // overflows fp16 to inf
    EXPECT_TRUE(cpu::Kernels::has_inf_or_nan(y.data(), 2));
  }
}

}  // namespace
}  // namespace zt
