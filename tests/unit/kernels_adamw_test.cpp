// AdamW against a two-step reference computed by hand (in double).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using testing::all_close;

TEST(KernelsAdamW, TwoStepsOfOneElementByHand) {
  // p = 1, g1 = 0.5, g2 = -0.25, lr = 0.1, wd = 0.01, betas (0.9, 0.999), eps = 1e-8.
  // Step 1: m = 0.05, v = 2.5e-4, mhat = 0.05 / 0.1 = 0.5, vhat = 2.5e-4 / 1e-3 = 0.25,
  //   p = 1 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01 * 1) = 0.899000002.
  // Step 2: m = 0.045 - 0.025 = 0.02, v = 2.4975e-4 + 6.25e-5 = 3.1225e-4,
  //   mhat = 0.02 / 0.19, vhat = 3.1225e-4 / 0.001999,
  //   p = p1 - 0.1 * (mhat / (sqrt(vhat) + 1e-8) + 0.01 p1) = 0.871468...
  // (The betas are floats: 1 - 0.999f = 0.99998713e-3, so m and v carry relative errors of
  // ~1e-7 and ~1.3e-5 against the decimal values; p is insensitive at step 1, vhat = g^2.)
  float p = 1.0f, m = 0.0f, v = 0.0f;
  cpu::AdamWParams ap;
  ap.lr = 0.1f;
  ap.weight_decay = 0.01f;
  const float g1 = 0.5f, g2 = -0.25f;
  ap.step = 1;
  cpu::Kernels::adamw(&p, &m, &v, &g1, 1, ap);
  const double p1 = 1.0 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01);
  EXPECT_NEAR(m, 0.05, 0.05 * 1e-6);
  EXPECT_NEAR(v, 2.5e-4, 2.5e-4 * 2e-5);
  EXPECT_NEAR(p, p1, 1e-7);
  EXPECT_NEAR(p, 0.899000002, 1e-7);
  ap.step = 2;
  cpu::Kernels::adamw(&p, &m, &v, &g2, 1, ap);
  const double mhat = 0.02 / 0.19, vhat = 3.1225e-4 / 0.001999;
  const double p2 = p1 - 0.1 * (mhat / (std::sqrt(vhat) + 1e-8) + 0.01 * p1);
  EXPECT_NEAR(m, 0.02, 0.02 * 2e-6);
  EXPECT_NEAR(v, 3.1225e-4, 3.1225e-4 * 2e-5);
  EXPECT_NEAR(p, p2, 2e-7);
  EXPECT_NEAR(p, 0.871468, 1e-6);
}

TEST(KernelsAdamW, TwoStepsVectorWithGradScaleAgainstReference) {
  const int64_t n = 70001;  // the parallel path and a vector tail
  auto p = testing::random_floats(n, 1), m = testing::random_floats(n, 2, -0.1f, 0.1f),
       v = testing::random_floats(n, 3, 0.0f, 0.01f);
  const auto g1 = testing::random_floats(n, 4, -8, 8), g2 = testing::random_floats(n, 5, -8, 8);
  std::vector<double> pd(p.begin(), p.end()), md(m.begin(), m.end()), vd(v.begin(), v.end());
  cpu::AdamWParams ap;
  ap.lr = 3e-3f;
  ap.beta1 = 0.8f;
  ap.beta2 = 0.95f;
  ap.eps = 1e-6f;
  ap.weight_decay = 0.1f;
  ap.grad_scale = 0.125f;
  for (int64_t step = 5; step <= 6; ++step) {  // a resumed run: step is not 1
    const auto& g = step == 5 ? g1 : g2;
    ap.step = step;
    cpu::Kernels::adamw(p.data(), m.data(), v.data(), g.data(), n, ap);
    const double b1 = ap.beta1, b2 = ap.beta2, bc1 = 1 - std::pow(b1, step),
                 bc2 = 1 - std::pow(b2, step);
    for (int64_t i = 0; i < n; ++i) {
      const double gi = double(g[i]) * ap.grad_scale;
      md[i] = b1 * md[i] + (1 - b1) * gi;
      vd[i] = b2 * vd[i] + (1 - b2) * gi * gi;
      pd[i] -= double(ap.lr) * ((md[i] / bc1) / (std::sqrt(vd[i] / bc2) + double(ap.eps)) +
                                ap.weight_decay * pd[i]);
    }
  }
  EXPECT_TRUE(all_close(m, md, 1e-5, 1e-7));
  EXPECT_TRUE(all_close(v, vd, 1e-5, 1e-9));
  // lr = 3e-3 per step: an update error of 1e-4 relative is 3e-7 absolute.
  EXPECT_TRUE(all_close(p, pd, 1e-6, 1e-7));
}

}  // namespace
}  // namespace zt
