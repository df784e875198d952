// GeLU (tanh approximation) and the exp_f32 it is built on.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "kernels/common/gelu.h"
#include "kernels/common/math.h"
#include "kernels/cpu/ops.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using testing::all_close;

double ref_gelu(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double ref_gelu_grad(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  const double u = k * (x + 0.044715 * x * x * x);
  const double th = std::tanh(u);
  return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * k * (1.0 + 3 * 0.044715 * x * x);
}

// Distance in units of the float spacing at the reference value (subnormal spacing below).
double ulps(float got, double want) {
  const float wf = static_cast<float>(want);
  double ulp = std::fabs(double(std::nextafter(wf, std::numeric_limits<float>::infinity())) - wf);
  if (std::fabs(want) < std::numeric_limits<float>::min()) ulp = std::ldexp(1.0, -149);
  return std::fabs(double(got) - want) / ulp;
}

TEST(KernelsExp, WithinTwoUlpsOverTheWholeRange) {
  double worst = 0;
  for (double x = -103.0; x <= 88.7; x += 1e-4) {
    const float xf = static_cast<float>(x);
    worst = std::fmax(worst, ulps(exp_f32(xf), std::exp(double(xf))));
  }
  EXPECT_LE(worst, 2.0);
}

TEST(KernelsExp, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-inf), 0.0f);
  EXPECT_EQ(exp_f32(-1000.0f), 0.0f);
  EXPECT_EQ(exp_f32(-104.0f), 0.0f);
  EXPECT_EQ(exp_f32(inf), inf);
  EXPECT_EQ(exp_f32(89.0f), inf);
  EXPECT_EQ(exp_f32(1000.0f), inf);
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
  // Gradual underflow: exp(-100) = 3.72e-44 is a subnormal float.
  EXPECT_LE(ulps(exp_f32(-100.0f), std::exp(-100.0)), 1.0);
  EXPECT_GT(exp_f32(-100.0f), 0.0f);
  // Largest finite result.
  EXPECT_LE(ulps(exp_f32(88.72f), std::exp(double(88.72f))), 2.0);
}

TEST(KernelsGelu, ForwardAndBackwardAgainstTanhFormula) {
  std::vector<float> x;
  for (int i = -4000; i <= 4000; ++i) x.push_back(static_cast<float>(i) * 0.0025f);  // [-10, 10]
  for (float v : {-30.0f, -15.0f, -1e-30f, 0.0f, 1e-30f, 15.0f, 30.0f, 1e4f}) x.push_back(v);
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> y(x.size()), dx(x.size()), dout = testing::random_floats(x.size(), 3);
  cpu::Kernels::gelu_forward(y.data(), x.data(), n);
  cpu::Kernels::gelu_backward(dx.data(), x.data(), dout.data(), n);
  std::vector<double> yw(x.size()), dxw(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    yw[i] = ref_gelu(x[i]);
    dxw[i] = dout[i] * ref_gelu_grad(x[i]);
  }
  // Relative 1e-6 plus a tiny absolute term for the values near zero (negative x); the
  // gradient crosses zero near x = -0.75, where its error is relative to the terms (~1).
  EXPECT_TRUE(all_close(y, yw, 1e-6, 1e-9));
  EXPECT_TRUE(all_close(dx, dxw, 2e-6, 1e-7));
  EXPECT_EQ(gelu_tanh(0.0f), 0.0f);
  EXPECT_EQ(gelu_tanh_grad(0.0f), 0.5f);
  // Large |x|: the identity and the gradient saturate cleanly (no NaN).
  EXPECT_EQ(gelu_tanh(-100.0f), 0.0f);
  EXPECT_EQ(gelu_tanh(100.0f), 100.0f);
  EXPECT_EQ(gelu_tanh_grad(-100.0f), 0.0f);
  EXPECT_EQ(gelu_tanh_grad(100.0f), 1.0f);
}

TEST(KernelsGelu, GradientMatchesFiniteDifference) {
  for (double x = -6.0; x <= 6.0; x += 0.37) {
    const double h = 1e-6;
    const double fd = (ref_gelu(x + h) - ref_gelu(x - h)) / (2 * h);
    EXPECT_NEAR(ref_gelu_grad(x), fd, 1e-8) << x;
    EXPECT_NEAR(gelu_tanh_grad(static_cast<float>(x)), fd, 2e-6) << x;
  }
}

TEST(KernelsGelu, ParallelPathMatchesScalar) {
  const auto x = testing::random_floats(100003, 9, -8, 8);
  std::vector<float> y(x.size());
  cpu::Kernels::gelu_forward(y.data(), x.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], gelu_tanh(x[i])) << i;
}

}  // namespace
}  // namespace zt
