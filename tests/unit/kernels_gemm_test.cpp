// gemm and linear forward/backward against naive double-precision references.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/ops.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using testing::all_close;
using testing::random_floats;

// C = alpha op(A) op(B) + beta C in double, with leading dimensions.
std::vector<double> ref_gemm(bool ta, bool tb, int M, int N, int K, double alpha,
                             const std::vector<float>& A, int lda, const std::vector<float>& B,
                             int ldb, double beta, const std::vector<float>& C, int ldc) {
  std::vector<double> out(C.begin(), C.end());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k) {
        const double a = ta ? A[size_t(k) * lda + i] : A[size_t(i) * lda + k];
        const double b = tb ? B[size_t(j) * ldb + k] : B[size_t(k) * ldb + j];
        s += a * b;
      }
      out[size_t(i) * ldc + j] = alpha * s + beta * C[size_t(i) * ldc + j];
    }
  return out;
}

TEST(KernelsGemm, AllTransposesWithLeadingDimensions) {
  const int M = 7, N = 5, K = 9;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 4;
      const auto A = random_floats(size_t(ta ? K : M) * lda, 1);
      const auto B = random_floats(size_t(tb ? N : K) * ldb, 2);
      auto C = random_floats(size_t(M) * ldc, 3);
      const auto want = ref_gemm(ta, tb, M, N, K, 0.75, A, lda, B, ldb, -0.5, C, ldc);
      cpu::gemm(ta, tb, M, N, K, 0.75f, A.data(), lda, B.data(), ldb, -0.5f, C.data(), ldc);
      EXPECT_TRUE(all_close(C, want, 1e-5, 1e-6)) << "ta=" << ta << " tb=" << tb;
    }
}

struct LinearCase {
  int N, in, out;
};

class KernelsLinear : public ::testing::TestWithParam<LinearCase> {};

TEST_P(KernelsLinear, ForwardWithAndWithoutBias) {
  const auto [N, in, out] = GetParam();
  const auto x = random_floats(size_t(N) * in, 10), w = random_floats(size_t(out) * in, 11),
             b = random_floats(out, 12);
  for (bool bias : {true, false}) {
    std::vector<double> want(size_t(N) * out);
    for (int n = 0; n < N; ++n)
      for (int o = 0; o < out; ++o) {
        double s = bias ? b[o] : 0.0;
        for (int i = 0; i < in; ++i) s += double(x[size_t(n) * in + i]) * w[size_t(o) * in + i];
        want[size_t(n) * out + o] = s;
      }
    std::vector<float> y(size_t(N) * out, 123.0f);  // garbage: must be overwritten
    cpu::Kernels::linear_forward(y.data(), x.data(), w.data(), bias ? b.data() : nullptr, N, in,
                                 out);
    EXPECT_TRUE(all_close(y, want, 1e-5, 1e-5)) << "bias=" << bias;
  }
}

TEST_P(KernelsLinear, BackwardAccumulates) {
  const auto [N, in, out] = GetParam();
  const auto x = random_floats(size_t(N) * in, 20), w = random_floats(size_t(out) * in, 21),
             dy = random_floats(size_t(N) * out, 22);
  const auto dx0 = random_floats(size_t(N) * in, 23), dw0 = random_floats(size_t(out) * in, 24),
             db0 = random_floats(out, 25);
  std::vector<double> dx_want(size_t(N) * in, 0), dw_want(dw0.begin(), dw0.end()),
      db_want(db0.begin(), db0.end());
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < out; ++o) {
      const double g = dy[size_t(n) * out + o];
      db_want[o] += g;
      for (int i = 0; i < in; ++i) {
        dx_want[size_t(n) * in + i] += g * w[size_t(o) * in + i];
        dw_want[size_t(o) * in + i] += g * x[size_t(n) * in + i];
      }
    }
  for (bool acc : {false, true}) {
    auto dx = dx0, dw = dw0, db = db0;
    cpu::Kernels::linear_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), N,
                                  in, out, acc);
    std::vector<double> want = dx_want;
    if (acc)
      for (size_t i = 0; i < want.size(); ++i) want[i] += dx0[i];
    EXPECT_TRUE(all_close(dx, want, 1e-5, 1e-5)) << "accumulate_dx=" << acc;
    EXPECT_TRUE(all_close(dw, dw_want, 1e-5, 1e-5));
    EXPECT_TRUE(all_close(db, db_want, 1e-5, 1e-5));
  }
  // dx and db may be null.
  auto dw = dw0;
  cpu::Kernels::linear_backward(static_cast<float*>(nullptr), dw.data(), nullptr, dy.data(),
                                x.data(), w.data(), N, in, out, false);
  EXPECT_TRUE(all_close(dw, dw_want, 1e-5, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Shapes, KernelsLinear,
                         ::testing::Values(LinearCase{1, 1, 1}, LinearCase{7, 12, 5},
                                           LinearCase{33, 17, 300}, LinearCase{130, 64, 129}));

}  // namespace
}  // namespace zt
