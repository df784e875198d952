// A mixture of experts' kernels (kernels/common/moe.h) on the CPU against double-precision
// references: routing by softmax and sigmoid, with and without renormalisation, its gradient
// against central differences (weights' and scores' gradients together), and the row moves
// (dispatch, weighted combine and its backward) with dropped slots, in every precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/ops.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using cpu::Kernels;
using testing::all_close;
using testing::random_floats;

struct Routed {
  std::vector<double> scores, weights;
  std::vector<int> experts;
};

// One token's routing in double; ties do not occur in these tests (random logits).
Routed route(const double* l, const MoeRouting& r) {
  Routed o;
  o.scores.resize(static_cast<size_t>(r.E));
  if (r.sigmoid) {
    for (int e = 0; e < r.E; ++e) o.scores[static_cast<size_t>(e)] = 1 / (1 + std::exp(-l[e]));
  } else {
    const double m = *std::max_element(l, l + r.E);
    double sum = 0;
    for (int e = 0; e < r.E; ++e) sum += o.scores[static_cast<size_t>(e)] = std::exp(l[e] - m);
    for (double& s : o.scores) s /= sum;
  }
  std::vector<int> order(static_cast<size_t>(r.E));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return o.scores[static_cast<size_t>(a)] > o.scores[static_cast<size_t>(b)];
  });
  o.experts.assign(order.begin(), order.begin() + r.k);
  double total = 0;
  for (int e : o.experts) total += o.scores[static_cast<size_t>(e)];
  for (int e : o.experts)
    o.weights.push_back(o.scores[static_cast<size_t>(e)] / (r.renormalize ? total : 1.0));
  return o;
}

std::vector<MoeRouting> routings() {
  std::vector<MoeRouting> out;
  for (const auto& [E, k] : {std::pair{8, 2}, std::pair{60, 4}, std::pair{4, 1}})
    for (bool sigmoid : {false, true})
      for (bool renormalize : {true, false}) out.push_back({E, k, sigmoid, renormalize});
  return out;
}

std::string name(const MoeRouting& r) {
  return fmt::format("E {} k {} {} {}", r.E, r.k, r.sigmoid ? "sigmoid" : "softmax",
                     r.renormalize ? "renormalised" : "raw");
}

TEST(MoeKernels, RoutingIsTheTopKOfTheScores) {
  const int N = 37;
  for (const MoeRouting& r : routings()) {
    const std::vector<float> logits = random_floats(static_cast<size_t>(N * r.E), 11, -3, 3);
    std::vector<float> scores(logits.size()), weights(static_cast<size_t>(N * r.k));
    std::vector<int32_t> experts(weights.size());
    Kernels::moe_route_forward(scores.data(), experts.data(), weights.data(), logits.data(), N, r);
    std::vector<double> want_scores, want_weights;
    std::vector<int32_t> want_experts;
    for (int t = 0; t < N; ++t) {
      const std::vector<double> l(logits.begin() + t * r.E, logits.begin() + (t + 1) * r.E);
      const Routed o = route(l.data(), r);
      want_scores.insert(want_scores.end(), o.scores.begin(), o.scores.end());
      want_weights.insert(want_weights.end(), o.weights.begin(), o.weights.end());
      want_experts.insert(want_experts.end(), o.experts.begin(), o.experts.end());
    }
    EXPECT_EQ(experts, want_experts) << name(r);
    EXPECT_TRUE(all_close(scores, want_scores, 1e-5, 1e-7)) << name(r);
    EXPECT_TRUE(all_close(weights, want_weights, 1e-5, 1e-7)) << name(r);
  }
}

// L = sum dweights · weights + sum_e dscores[e] · sum_t scores[t][e]: the kernel's dlogits is
// dL/dlogits.
TEST(MoeKernels, RoutingGradientMatchesFiniteDifferences) {
  const int N = 5;
  for (const MoeRouting& r : routings())
    for (bool with_scores : {false, true}) {
      const std::vector<float> logits = random_floats(static_cast<size_t>(N * r.E), 12, -2, 2);
      const std::vector<float> dweights = random_floats(static_cast<size_t>(N * r.k), 13);
      const std::vector<float> dscores = random_floats(static_cast<size_t>(r.E), 14);
      std::vector<float> scores(logits.size()), weights(dweights.size()), dlogits(logits.size());
      std::vector<int32_t> experts(dweights.size());
      Kernels::moe_route_forward(scores.data(), experts.data(), weights.data(), logits.data(), N,
                                 r);
      Kernels::moe_route_backward(dlogits.data(), scores.data(), experts.data(), dweights.data(),
                                  with_scores ? dscores.data() : nullptr, N, r);
      const auto loss = [&](const std::vector<double>& l) {
        double L = 0;
        for (int t = 0; t < N; ++t) {
          const Routed o = route(l.data() + t * r.E, r);
          for (int j = 0; j < r.k; ++j)
            L += dweights[static_cast<size_t>(t * r.k + j)] * o.weights[static_cast<size_t>(j)];
          if (with_scores)
            for (int e = 0; e < r.E; ++e)
              L += dscores[static_cast<size_t>(e)] * o.scores[static_cast<size_t>(e)];
        }
        return L;
      };
      const std::vector<double> want = testing::finite_diff(loss, testing::to_double(logits), 1e-6);
      EXPECT_TRUE(all_close(dlogits, want, 1e-4, 1e-6))
          << name(r) << (with_scores ? " with the scores' gradient" : "");
    }
}

template <typename T>
void check_row_moves(double tol) {
  const int N = 9, k = 3, C = 13;
  // Slots: token t's choice j is row (t·k + j) reversed, every fourth dropped.
  std::vector<int32_t> slots(static_cast<size_t>(N * k));
  int M = 0;
  for (int i = 0; i < N * k; ++i) slots[static_cast<size_t>(i)] = i % 4 == 3 ? -1 : M++;
  std::reverse(slots.begin(), slots.end());
  for (int32_t& s : slots)
    if (s >= 0) s = M - 1 - s;
  const std::vector<float> xf = random_floats(static_cast<size_t>(N * C), 21);
  const std::vector<float> w = random_floats(static_cast<size_t>(N * k), 22, 0, 1);
  const std::vector<float> dyf = random_floats(static_cast<size_t>(N * C), 23);
  std::vector<T> x(xf.size()), dy(dyf.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = from_float<T>(xf[i]), dy[i] = from_float<T>(dyf[i]);
  std::vector<T> rows(static_cast<size_t>(M * C)), y(x.size()), drows(rows.size()), dx(x.size());
  std::vector<float> dw(w.size());
  Kernels::moe_dispatch(rows.data(), x.data(), slots.data(), N, k, C);
  Kernels::moe_combine(y.data(), rows.data(), slots.data(), w.data(), N, k, C);
  Kernels::moe_combine_backward(drows.data(), dw.data(), dy.data(), rows.data(), slots.data(),
                                w.data(), N, k, C);
  Kernels::moe_combine(dx.data(), drows.data(), slots.data(), nullptr, N, k, C);
  std::vector<double> want_y(y.size(), 0), want_dx(x.size(), 0), want_dw(w.size(), 0);
  for (int t = 0; t < N; ++t)
    for (int j = 0; j < k; ++j) {
      const size_t tj = static_cast<size_t>(t * k + j);
      if (slots[tj] < 0) continue;
      for (int c = 0; c < C; ++c) {
        const size_t i = static_cast<size_t>(t * C + c);
        want_y[i] += w[tj] * to_float(x[i]);
        want_dx[i] += w[tj] * to_float(dy[i]);
        want_dw[tj] += double{to_float(dy[i])} * to_float(x[i]);
      }
    }
  std::vector<float> yf(y.size()), dxf(dx.size());
  for (size_t i = 0; i < y.size(); ++i) yf[i] = to_float(y[i]), dxf[i] = to_float(dx[i]);
  EXPECT_TRUE(all_close(yf, want_y, tol, tol));
  EXPECT_TRUE(all_close(dxf, want_dx, tol, tol));
  EXPECT_TRUE(all_close(dw, want_dw, 1e-5, 1e-5));
}

TEST(MoeKernels, RowMovesCombineAndTheirBackward) {
  check_row_moves<float>(1e-6);
  check_row_moves<bf16>(8e-3);
  check_row_moves<fp16>(1e-3);
}

// Each expert's rows times its own matrix, an expert without rows included; the weight gradient
// accumulates (beta 1) or overwrites (beta 0, the empty expert's cleared).
TEST(MoeKernels, GroupedGemmIsEachExpertsProduct) {
  const int E = 4, N = 24, K = 19;
  const std::vector<int64_t> rows = {5, 0, 33, 2};
  const int64_t M = 40;
  const std::vector<float> a = random_floats(static_cast<size_t>(M * K), 51);
  const std::vector<float> b = random_floats(static_cast<size_t>(E * N * K), 52);
  const std::vector<float> dc = random_floats(static_cast<size_t>(M * N), 53);
  for (bool trans_b : {true, false}) {
    std::vector<float> c(static_cast<size_t>(M * N), 1.0f);
    Kernels::grouped_gemm(trans_b, rows.data(), E, N, K, 0.5f, a.data(), b.data(), 1.0f, c.data());
    std::vector<double> want(c.size(), 1.0);
    for (int e = 0, at = 0; e < E; at += static_cast<int>(rows[static_cast<size_t>(e)]), ++e)
      for (int i = at; i < at + rows[static_cast<size_t>(e)]; ++i)
        for (int n = 0; n < N; ++n)
          for (int q = 0; q < K; ++q) {
            const size_t bi = static_cast<size_t>(e * N * K + (trans_b ? n * K + q : q * N + n));
            want[static_cast<size_t>(i * N + n)] += 0.5 * a[static_cast<size_t>(i * K + q)] * b[bi];
          }
    EXPECT_TRUE(all_close(c, want, 1e-5, 1e-5)) << (trans_b ? "B transposed" : "B as is");
  }
  for (float beta : {0.0f, 1.0f}) {
    std::vector<float> db(b.size(), 2.0f);
    Kernels::grouped_gemm_wgrad(rows.data(), E, N, K, 1.0f, dc.data(), a.data(), beta, db.data());
    std::vector<double> want(db.size(), beta * 2.0);
    for (int e = 0, at = 0; e < E; at += static_cast<int>(rows[static_cast<size_t>(e)]), ++e)
      for (int i = at; i < at + rows[static_cast<size_t>(e)]; ++i)
        for (int n = 0; n < N; ++n)
          for (int q = 0; q < K; ++q)
            want[static_cast<size_t>(e * N * K + n * K + q)] +=
                double{dc[static_cast<size_t>(i * N + n)]} * a[static_cast<size_t>(i * K + q)];
    EXPECT_TRUE(all_close(db, want, 1e-5, 1e-5)) << "beta " << beta;
  }
}

}  // namespace
}  // namespace zt
