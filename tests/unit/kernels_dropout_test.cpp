// Residual dropout-add and its backward; add_inplace and scale_inplace.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/common/dropout.h"
#include "kernels/cpu/ops.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using testing::bitwise_equal;
using testing::random_floats;

constexpr int64_t kN = 1 << 20;

TEST(KernelsDropout, ZeroProbabilityIsAPlainAdd) {
  const auto a = random_floats(1001, 1), x = random_floats(1001, 2);
  std::vector<float> out(a.size()), dx(a.size());
  cpu::Kernels::dropout_add_forward(out.data(), a.data(), x.data(), 1001, DropoutParams{});
  cpu::Kernels::dropout_backward(dx.data(), x.data(), 1001, DropoutParams{});
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(out[i], a[i] + x[i]);
    ASSERT_EQ(dx[i], x[i]);
  }
}

TEST(KernelsDropout, RateScaleAndReproducibility) {
  for (float p : {0.1f, 0.5f}) {
    const DropoutParams d{p, 42, 1000};
    const auto a = random_floats(kN, 3), x = random_floats(kN, 4, 0.5f, 1.0f);  // x != 0
    std::vector<float> out(kN), out2(kN);
    cpu::Kernels::dropout_add_forward(out.data(), a.data(), x.data(), kN, d);
    cpu::Kernels::dropout_add_forward(out2.data(), a.data(), x.data(), kN, d);
    EXPECT_TRUE(bitwise_equal(out, out2)) << "same (seed, offset) must give the same mask";
    int64_t dropped = 0;
    const float keep = 1.0f / (1.0f - p);
    for (int64_t i = 0; i < kN; ++i) {
      if (out[i] == a[i]) {
        ++dropped;
      } else {
        ASSERT_EQ(out[i], a[i] + x[i] * keep) << i;
      }
    }
    // Binomial: sd = sqrt(p (1-p) / n) <= 5e-4; allow 5 sd.
    EXPECT_NEAR(static_cast<double>(dropped) / kN, p, 2.5e-3) << "p=" << p;

    // Backward uses the same mask: dx = 0 exactly where forward dropped.
    const auto dout = random_floats(kN, 5, 0.5f, 1.0f);
    std::vector<float> dx(kN);
    cpu::Kernels::dropout_backward(dx.data(), dout.data(), kN, d);
    for (int64_t i = 0; i < kN; ++i) {
      const bool was_dropped = out[i] == a[i];
      ASSERT_EQ(dx[i], was_dropped ? 0.0f : dout[i] * keep) << i;
    }
  }
}

TEST(KernelsDropout, OffsetShiftsTheStreamAndSeedChangesIt) {
  const int64_t n = 4096, shift = 100;
  const auto dout = random_floats(n + shift, 6, 0.5f, 1.0f);
  std::vector<float> base(n + shift), shifted(n), other(n);
  cpu::Kernels::dropout_backward(base.data(), dout.data(), n + shift, {0.3f, 7, 0});
  cpu::Kernels::dropout_backward(shifted.data(), dout.data() + shift, n, {0.3f, 7, shift});
  cpu::Kernels::dropout_backward(other.data(), dout.data(), n, {0.3f, 8, 0});
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(shifted[i], base[i + shift]) << i;
  int64_t differ = 0;
  for (int64_t i = 0; i < n; ++i) differ += (other[i] == 0.0f) != (base[i] == 0.0f);
  EXPECT_GT(differ, n / 5);  // independent masks disagree on 2 p (1-p) = 42% of elements
}

TEST(KernelsDropout, MaskIsUncorrelatedBetweenNeighbours) {
  const DropoutParams d{0.5f, 3, 0};
  int64_t both = 0;
  for (uint64_t i = 0; i < 200000; ++i)
    both += dropout_scale(d, i) == 0.0f && dropout_scale(d, i + 1) == 0.0f;
  EXPECT_NEAR(static_cast<double>(both) / 200000, 0.25, 0.005);
}

TEST(KernelsElementwise, AddAndScaleInplace) {
  for (int64_t n : {int64_t{1}, int64_t{37}, int64_t{70000}}) {
    auto y = random_floats(n, 7);
    const auto x = random_floats(n, 8);
    const auto y0 = y;
    cpu::Kernels::add_inplace(y.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], y0[i] + x[i]);
    cpu::Kernels::scale_inplace(y.data(), -0.3f, n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], (y0[i] + x[i]) * -0.3f);
  }
}

}  // namespace
}  // namespace zt
