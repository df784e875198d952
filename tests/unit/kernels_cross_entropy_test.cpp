// Fused softmax cross-entropy with padded vocabulary columns, and its three vocab-parallel passes
// (vocab_ce_*) on shards of one process (the reductions between them done here by hand).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/core/error.h"
#include "src/core/half.h"
#include "tests/support/kernels_testing.h"

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

// The three passes over `shards` column shards of the full [N, V] logits, with the max and the
// sum across shards done here as the tp all-reduces would (MPI sums two values exactly as `+`).
template <typename T>
void vocab_parallel(std::vector<T>& logits, std::vector<float>& losses,
                    const std::vector<int32_t>& tg, int N, int V, int v_real, float dloss,
                    int shards) {
  const int local = V / shards;
  std::vector<std::vector<T>> part(shards, std::vector<T>(size_t(N) * local));
  for (int s = 0; s < shards; ++s)
    for (int n = 0; n < N; ++n)
      for (int j = 0; j < local; ++j)
        part[s][size_t(n) * local + j] = logits[size_t(n) * V + s * local + j];
  std::vector<float> mx(N, -INFINITY), sz(2 * size_t(N), 0.0f), tmp(2 * size_t(N));
  for (int s = 0; s < shards; ++s) {
    cpu::Kernels::vocab_ce_max(part[s].data(), tmp.data(), N, local, s * local, v_real);
    for (int n = 0; n < N; ++n) mx[n] = std::fmax(mx[n], tmp[n]);
  }
  for (int s = 0; s < shards; ++s) {
    cpu::Kernels::vocab_ce_sum_exp(part[s].data(), tmp.data(), mx.data(), tg.data(), N, local,
                                   s * local, v_real);
    for (int i = 0; i < 2 * N; ++i) sz[i] += tmp[i];
  }
  for (int s = 0; s < shards; ++s) {
    cpu::Kernels::vocab_ce_grad(part[s].data(), losses.data(), mx.data(), sz.data(), tg.data(), N,
                                local, s * local, v_real, dloss);
    for (int n = 0; n < N; ++n)
      for (int j = 0; j < local; ++j)
        logits[size_t(n) * V + s * local + j] = part[s][size_t(n) * local + j];
  }
}

template <typename T>
void check_vocab_parallel(float tol) {
  const int N = 9, V = 96, v_real = 70;  // the last shard of 4 is all padding
  const auto x = random_floats(size_t(N) * V, 7, -5, 5);
  std::vector<int32_t> tg(N);
  for (int n = 0; n < N; ++n) tg[n] = (n * 13 + 5) % v_real;
  std::vector<T> logits(x.size());
  for (size_t i = 0; i < x.size(); ++i) logits[i] = from_float<T>(x[i]);
  const float dloss = 0.125f;
  std::vector<float> want_loss(N), got_loss(N);
  auto want = logits;
  cpu::Kernels::softmax_cross_entropy(want.data(), want_loss.data(), tg.data(), N, V, v_real,
                                      dloss);
  // One shard is the fused kernel's arithmetic step for step: bitwise.
  auto one = logits;
  vocab_parallel(one, got_loss, tg, N, V, v_real, dloss, 1);
  EXPECT_TRUE(testing::bitwise_equal(one, want));
  EXPECT_TRUE(testing::bitwise_equal(got_loss, want_loss));
  // Shards sum in another order: equal to rounding.
  for (const int shards : {2, 4}) {
    auto got = logits;
    vocab_parallel(got, got_loss, tg, N, V, v_real, dloss, shards);
    std::vector<float> g(got.size()), w(want.size());
    for (size_t i = 0; i < g.size(); ++i) g[i] = to_float(got[i]), w[i] = to_float(want[i]);
    EXPECT_TRUE(all_close(got_loss, want_loss, 1e-6, 0)) << shards << " shards";
    EXPECT_TRUE(all_close(g, w, tol, tol * dloss)) << shards << " shards";
    for (int n = 0; n < N; ++n)
      for (int j = v_real; j < V; ++j) ASSERT_EQ(g[size_t(n) * V + j], 0.0f);
  }
}

TEST(KernelsVocabParallelCrossEntropy, ShardsMatchTheFusedKernel) {
  check_vocab_parallel<float>(1e-6f);
  check_vocab_parallel<bf16>(1e-2f);  // a half gradient differs by its last bit
  check_vocab_parallel<fp16>(1e-3f);
}

TEST(KernelsVocabParallelCrossEntropy, RejectsTargetsOutsideTheRealVocabulary) {
  std::vector<float> logits(8, 0.0f), mx(1, 0.0f), sz(2);
  for (const int32_t bad : {6, -1}) {
    std::vector<int32_t> tg{bad};
    EXPECT_THROW(
        cpu::Kernels::vocab_ce_sum_exp(logits.data(), sz.data(), mx.data(), tg.data(), 1, 8, 0, 6),
        Error);
  }
}

}  // namespace
}  // namespace zt
