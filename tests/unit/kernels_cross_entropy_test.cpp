// Fused softmax cross-entropy with padded vocabulary columns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/core/error.h"
#include "tests/unit/kernels_testing.h"

namespace zt {
namespace {

using testing::all_close;
using testing::finite_diff;
using testing::max_abs;
using testing::random_floats;

// Per-row loss -log softmax(x)[target] over the first v_real columns, in double.
double ref_loss_row(const double* x, int v_real, int target) {
  double mx = -1e300, s = 0;
  for (int j = 0; j < v_real; ++j) mx = std::fmax(mx, x[j]);
  for (int j = 0; j < v_real; ++j) s += std::exp(x[j] - mx);
  return std::log(s) + mx - x[target];
}

struct CeCase {
  int N, V, v_real;
  float shift;  // added to every logit: stability
};
class KernelsCrossEntropy : public ::testing::TestWithParam<CeCase> {};

TEST_P(KernelsCrossEntropy, LossAndGradient) {
  const auto [N, V, v_real, shift] = GetParam();
  auto logits = random_floats(size_t(N) * V, 1, -4, 4);
  std::vector<int32_t> tg(N);
  for (int n = 0; n < N; ++n) {
    tg[n] = (n * 7 + 3) % v_real;
    for (int j = 0; j < V; ++j) {
      float& l = logits[size_t(n) * V + j];
      l = j < v_real ? l + shift : 1e30f;  // padding must not count, whatever it holds
    }
  }
  const float dloss = 1.0f / static_cast<float>(N);
  std::vector<double> lw(N), gw(size_t(N) * V, 0.0);
  for (int n = 0; n < N; ++n) {
    std::vector<double> row(logits.begin() + int64_t(n) * V, logits.begin() + int64_t(n + 1) * V);
    lw[n] = ref_loss_row(row.data(), v_real, tg[n]);
    double mx = -1e300, s = 0;
    for (int j = 0; j < v_real; ++j) mx = std::fmax(mx, row[j]);
    for (int j = 0; j < v_real; ++j) s += std::exp(row[j] - mx);
    for (int j = 0; j < v_real; ++j)
      gw[size_t(n) * V + j] = (std::exp(row[j] - mx) / s - (j == tg[n])) * dloss;
  }
  auto g = logits;
  std::vector<float> losses(N);
  cpu::Kernels::softmax_cross_entropy(g.data(), losses.data(), tg.data(), N, V, v_real, dloss);
  EXPECT_TRUE(all_close(losses, lw, 1e-5, 1e-5));
  EXPECT_TRUE(all_close(g, gw, 1e-5, 1e-5 * max_abs(gw)));
  for (int n = 0; n < N; ++n)
    for (int j = v_real; j < V; ++j) ASSERT_EQ(g[size_t(n) * V + j], 0.0f);

  // The analytic reference against finite differences of sum(losses) * dloss.
  if (shift == 0.0f && N * V <= 2000) {
    std::vector<double> x(logits.begin(), logits.end());
    const auto fd = finite_diff(
        [&](const std::vector<double>& v) {
          double L = 0;
          for (int n = 0; n < N; ++n) L += ref_loss_row(v.data() + size_t(n) * V, v_real, tg[n]);
          return L * dloss;
        },
        x);
    EXPECT_TRUE(all_close(gw, fd, 1e-6, 1e-8));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, KernelsCrossEntropy,
                         ::testing::Values(CeCase{1, 1, 1, 0}, CeCase{5, 16, 11, 0},
                                           CeCase{3, 37, 37, 0}, CeCase{4, 100, 64, 1000.0f},
                                           CeCase{64, 1030, 1000, -50.0f}));

TEST(KernelsCrossEntropy, RejectsTargetsOutsideTheRealVocabulary) {
  std::vector<float> logits(8, 0.0f), losses(1);
  std::vector<int32_t> tg{6};
  EXPECT_THROW(
      cpu::Kernels::softmax_cross_entropy(logits.data(), losses.data(), tg.data(), 1, 8, 6, 1.0f),
      Error);
}

}  // namespace
}  // namespace zt
