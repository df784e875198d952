// The multi-tensor optimizer kernels (sum_squares_multi, adamw_multi) against the per-segment
// kernels they replace: bitwise, since the optimizer's results on the CPU must not change.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/core/half.h"
#include "tests/support/half_vectors.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using testing::random_floats;

// Segment sizes: empty, tiny, fewer than kNormBlocks, a vector tail, the parallel path.
const int64_t kSizes[] = {0, 1, 37, 1000, 70001};

template <typename T>
void check_sum_squares_multi() {
  std::vector<std::vector<T>> xs;
  std::vector<NormSegment> segs;
  double want = 0;
  uint32_t seed = 1;
  for (const int64_t n : kSizes) {
    xs.push_back(test::narrow<T>(random_floats(size_t(n), seed++, -3, 3)));
    want += cpu::Kernels::sum_squares(xs.back().data(), n);
  }
  for (size_t k = 0; k < xs.size(); ++k) segs.push_back({xs[k].data(), kSizes[k]});
  std::vector<double> partials(kNormPartials);
  double got = -1;
  cpu::Kernels::sum_squares_multi<T>(&got, partials.data(), segs.data(), int(segs.size()));
  EXPECT_EQ(got, want) << dtype_name(dtype_of<T>());
  EXPECT_GT(got, 0.0);
  // No segment: 0. An inf or a NaN anywhere: not finite.
  cpu::Kernels::sum_squares_multi<T>(&got, partials.data(), segs.data(), 0);
  EXPECT_EQ(got, 0.0);
  for (const float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    auto x = xs[3];
    x[500] = from_float<T>(bad);
    auto s = segs;
    s[3].x = x.data();
    cpu::Kernels::sum_squares_multi<T>(&got, partials.data(), s.data(), int(s.size()));
    EXPECT_FALSE(std::isfinite(got)) << bad;
  }
}

TEST(KernelsMultiTensor, SumSquaresIsTheSumOfPerSegmentSumsInOrder) {
  check_sum_squares_multi<float>();
  check_sum_squares_multi<bf16>();
  check_sum_squares_multi<fp16>();
}

// adamw_multi with per-segment weight decay and G gradients against adamw per segment on the
// gradients widened to fp32 (what the optimizer did before: cast into a chunk, then adamw).
template <typename G>
void check_adamw_multi() {
  AdamWParams ap;
  ap.lr = 3e-3f;
  ap.grad_scale = 0.5f;
  ap.weight_decay = 123.0f;  // must not be used
  ap.step = 7;
  const size_t K = std::size(kSizes);
  std::vector<std::vector<float>> p(K), m(K), v(K), pw(K), mw(K), vw(K);
  std::vector<std::vector<G>> g(K);
  std::vector<AdamWSegment> segs;
  for (size_t k = 0; k < K; ++k) {
    const auto n = size_t(kSizes[k]);
    p[k] = pw[k] = random_floats(n, 10 + uint32_t(k));
    m[k] = mw[k] = random_floats(n, 20 + uint32_t(k), -0.1f, 0.1f);
    v[k] = vw[k] = random_floats(n, 30 + uint32_t(k), 0.0f, 0.01f);
    g[k] = test::narrow<G>(random_floats(n, 40 + uint32_t(k)));
    const float wd = k % 2 == 0 ? 0.1f : 0.0f;
    segs.push_back({p[k].data(), m[k].data(), v[k].data(), g[k].data(), int64_t(n), wd});
    std::vector<float> gf(n);
    for (size_t i = 0; i < n; ++i) gf[i] = to_float(g[k][i]);
    AdamWParams one = ap;
    one.weight_decay = wd;
    cpu::Kernels::adamw(pw[k].data(), mw[k].data(), vw[k].data(), gf.data(), int64_t(n), one);
  }
  cpu::Kernels::adamw_multi<G>(segs.data(), int(segs.size()), ap);
  for (size_t k = 0; k < K; ++k) {
    EXPECT_TRUE(testing::bitwise_equal(p[k], pw[k])) << "segment " << k;
    EXPECT_TRUE(testing::bitwise_equal(m[k], mw[k])) << "segment " << k;
    EXPECT_TRUE(testing::bitwise_equal(v[k], vw[k])) << "segment " << k;
  }
  EXPECT_NE(p[4], random_floats(size_t(kSizes[4]), 14)) << "the step changed nothing";
}

TEST(KernelsMultiTensor, AdamWIsPerSegmentAdamWWithItsWeightDecay) {
  check_adamw_multi<float>();
  check_adamw_multi<bf16>();
  check_adamw_multi<fp16>();
}

}  // namespace
}  // namespace zt
