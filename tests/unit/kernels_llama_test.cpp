// The Llama-family kernels (RMSNorm, SwiGLU, rotary embeddings) against naive references in
// double, whose backward is itself checked against central finite differences of its forward.
// fp32, bf16 and fp16; row lengths and sequence lengths off any tile or lane multiple; one and
// several key/value heads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/core/half.h"
#include "tests/support/half_vectors.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using test::narrow;
using test::widen;
using testing::all_close;
using testing::finite_diff;
using testing::max_abs;
using testing::random_floats;
using testing::to_double;

// Inputs representable in H, widened back (so the kernel and the reference see the same values).
template <typename H>
std::vector<float> representable(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  return widen(narrow<H>(random_floats(n, seed, lo, hi)));
}

template <typename H>
constexpr double kTol = std::is_same_v<H, float> ? 2e-6 : (std::is_same_v<H, bf16> ? 1e-2 : 2e-3);

// ---- RMSNorm ----------------------------------------------------------------------------------

struct RmsRef {
  std::vector<double> out, dx, dw;
  RmsRef(const std::vector<double>& x, const std::vector<double>& w, int N, int C, double eps,
         const std::vector<double>* dout = nullptr) {
    out.assign(x.size(), 0);
    if (dout != nullptr) dx.assign(x.size(), 0), dw.assign(size_t(C), 0);
    for (int n = 0; n < N; ++n) {
      const double* r = &x[size_t(n) * C];
      double ss = 0;
      for (int c = 0; c < C; ++c) ss += r[c] * r[c];
      const double rs = 1.0 / std::sqrt(ss / C + eps);
      for (int c = 0; c < C; ++c) out[size_t(n) * C + c] = r[c] * rs * w[size_t(c)];
      if (dout == nullptr) continue;
      const double* d = &(*dout)[size_t(n) * C];
      double m = 0;
      for (int c = 0; c < C; ++c) m += d[c] * w[size_t(c)] * r[c] * rs;
      m /= C;
      for (int c = 0; c < C; ++c) {
        dx[size_t(n) * C + c] = rs * (d[c] * w[size_t(c)] - r[c] * rs * m);
        dw[size_t(c)] += d[c] * r[c] * rs;
      }
    }
  }
};

template <typename H>
void check_rmsnorm(int N, int C) {
  const float eps = 1e-6f;
  const auto x = representable<H>(size_t(N) * C, 1, -2.0f, 2.0f);
  const auto w = representable<H>(size_t(C), 2, 0.5f, 1.5f);
  const auto dout = representable<H>(size_t(N) * C, 3);
  const auto dx0 = representable<H>(size_t(N) * C, 4);  // backward adds into dx
  std::vector<H> out(x.size()), dx = narrow<H>(dx0);
  std::vector<float> rstd(static_cast<size_t>(N)), dw(static_cast<size_t>(C), 0.25f);
  const auto xh = narrow<H>(x), wh = narrow<H>(w), dh = narrow<H>(dout);
  cpu::Kernels::rmsnorm_forward(out.data(), rstd.data(), xh.data(), wh.data(), N, C, eps);
  cpu::Kernels::rmsnorm_backward(dx.data(), dw.data(), dh.data(), xh.data(), wh.data(), rstd.data(),
                                 N, C);
  const auto dd = to_double(dout);
  const RmsRef ref(to_double(x), to_double(w), N, C, eps, &dd);
  std::vector<double> want_dx(ref.dx), want_dw(ref.dw);
  for (size_t i = 0; i < want_dx.size(); ++i) want_dx[i] += dx0[i];
  for (double& v : want_dw) v += 0.25;
  const double tol = kTol<H>;
  EXPECT_TRUE(all_close(widen(out), ref.out, tol, tol * max_abs(ref.out))) << N << "x" << C;
  EXPECT_TRUE(all_close(widen(dx), want_dx, tol, 4 * tol * max_abs(want_dx))) << N << "x" << C;
  EXPECT_TRUE(all_close(dw, want_dw, 1e-5, 1e-5 * N * max_abs(want_dw))) << N << "x" << C;
}

TEST(KernelsRmsNorm, MatchesNaive) {
  for (const auto& [N, C] : {std::pair{1, 1}, std::pair{3, 7}, std::pair{5, 64}, std::pair{9, 130},
                             std::pair{300, 200}}) {
    check_rmsnorm<float>(N, C);
    check_rmsnorm<bf16>(N, C);
    check_rmsnorm<fp16>(N, C);
  }
}

TEST(KernelsRmsNorm, ReferenceBackwardMatchesFiniteDifferences) {
  const int N = 3, C = 5;
  const auto x = to_double(random_floats(size_t(N) * C, 5, -2, 2));
  const auto w = to_double(random_floats(size_t(C), 6, 0.5, 1.5));
  const auto R = to_double(random_floats(size_t(N) * C, 7));
  const RmsRef ref(x, w, N, C, 1e-6, &R);
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww) {
    const RmsRef f(xx, ww, N, C, 1e-6);
    double L = 0;
    for (size_t i = 0; i < f.out.size(); ++i) L += R[i] * f.out[i];
    return L;
  };
  const auto gx = finite_diff([&](const std::vector<double>& v) { return loss(v, w); }, x);
  const auto gw = finite_diff([&](const std::vector<double>& v) { return loss(x, v); }, w);
  EXPECT_TRUE(all_close(ref.dx, gx, 1e-6, 1e-7));
  EXPECT_TRUE(all_close(ref.dw, gw, 1e-6, 1e-7));
}

// ---- SwiGLU -----------------------------------------------------------------------------------

double silu(double g) {
  return g / (1.0 + std::exp(-g));
}

template <typename H>
void check_swiglu(int N, int F) {
  const auto pre = representable<H>(size_t(N) * 2 * F, 8, -6.0f, 6.0f);
  const auto dy = representable<H>(size_t(N) * F, 9);
  std::vector<H> y(size_t(N) * F), dpre(pre.size());
  const auto ph = narrow<H>(pre), dh = narrow<H>(dy);
  cpu::Kernels::swiglu_forward(y.data(), ph.data(), N, F);
  cpu::Kernels::swiglu_backward(dpre.data(), dh.data(), ph.data(), N, F);
  std::vector<double> want_y(y.size()), want_d(pre.size());
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < F; ++i) {
      const double g = pre[size_t(n) * 2 * F + i], u = pre[size_t(n) * 2 * F + F + i];
      const double s = 1.0 / (1.0 + std::exp(-g)), d = dy[size_t(n) * F + i];
      want_y[size_t(n) * F + i] = silu(g) * u;
      want_d[size_t(n) * 2 * F + i] = d * u * (s + g * s * (1 - s));
      want_d[size_t(n) * 2 * F + F + i] = d * silu(g);
    }
  const double tol = kTol<H>;
  EXPECT_TRUE(all_close(widen(y), want_y, 2 * tol, tol * max_abs(want_y))) << N << "x" << F;
  EXPECT_TRUE(all_close(widen(dpre), want_d, 2 * tol, tol * max_abs(want_d))) << N << "x" << F;
}

TEST(KernelsSwiGlu, MatchesNaive) {
  for (const auto& [N, F] :
       {std::pair{1, 1}, std::pair{3, 7}, std::pair{17, 96}, std::pair{200, 500}}) {
    check_swiglu<float>(N, F);
    check_swiglu<bf16>(N, F);
    check_swiglu<fp16>(N, F);
  }
}

TEST(KernelsSwiGlu, GradientMatchesFiniteDifferences) {
  const int N = 2, F = 3;
  const auto pre = to_double(random_floats(size_t(N) * 2 * F, 10, -3, 3));
  const auto R = to_double(random_floats(size_t(N) * F, 11));
  auto loss = [&](const std::vector<double>& p) {
    double L = 0;
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < F; ++i)
        L += R[size_t(n) * F + i] * silu(p[size_t(n) * 2 * F + i]) * p[size_t(n) * 2 * F + F + i];
    return L;
  };
  const auto g = finite_diff(loss, pre);
  // The kernel's fp32 gradient on the same (fp32) inputs.
  std::vector<float> pf(pre.begin(), pre.end()), rf(R.begin(), R.end()), d(pf.size());
  cpu::Kernels::swiglu_backward(d.data(), rf.data(), pf.data(), N, F);
  EXPECT_TRUE(all_close(d, g, 1e-5, 1e-6));
}

// ---- Rotary embeddings ------------------------------------------------------------------------

struct RopeCase {
  int B, T, NH, G, hd;
};

// The rotate_half rotation in double: pair (i, i + d/2) of every q and k head of row (b, t) by
// the angle t · base^(-2i/d); v untouched. sign -1: the inverse.
std::vector<double> rope_ref(std::vector<double> x, const RopeCase& s, double base, double sign) {
  const int half = s.hd / 2, ld = (s.NH + 2 * s.G) * s.hd;
  for (int b = 0; b < s.B; ++b)
    for (int t = 0; t < s.T; ++t)
      for (int h = 0; h < s.NH + s.G; ++h)
        for (int i = 0; i < half; ++i) {
          const double a = t * std::pow(base, -2.0 * i / s.hd);
          const size_t at = (size_t(b) * s.T + t) * ld + size_t(h) * s.hd + i;
          const double x0 = x[at], x1 = x[at + half];
          x[at] = x0 * std::cos(a) - sign * x1 * std::sin(a);
          x[at + half] = x1 * std::cos(a) + sign * x0 * std::sin(a);
        }
  return x;
}

template <typename H>
void check_rope(const RopeCase& s) {
  const float base = 10000.0f;
  const size_t n = size_t(s.B) * s.T * (s.NH + 2 * s.G) * s.hd;
  const auto x = representable<H>(n, 12);
  auto fwd = narrow<H>(x), bwd = narrow<H>(x);
  cpu::Kernels::rope_forward(fwd.data(), s.B, s.T, s.NH, s.G, s.hd, rope_freqs(s.hd, base));
  cpu::Kernels::rope_backward(bwd.data(), s.B, s.T, s.NH, s.G, s.hd, rope_freqs(s.hd, base));
  const auto want_f = rope_ref(to_double(x), s, base, 1.0);
  const auto want_b = rope_ref(to_double(x), s, base, -1.0);
  // fp32 angles of positions up to T: |error| ~ T · 2^-24 radians.
  const double tol = std::max(kTol<H>, 4e-7 * s.T);
  EXPECT_TRUE(all_close(widen(fwd), want_f, tol, tol)) << s.T << " " << s.NH << "/" << s.G;
  EXPECT_TRUE(all_close(widen(bwd), want_b, tol, tol)) << s.T << " " << s.NH << "/" << s.G;
  // v is untouched, bit for bit.
  const int ld = (s.NH + 2 * s.G) * s.hd, v0 = (s.NH + s.G) * s.hd;
  const auto xh = narrow<H>(x);
  for (size_t r = 0; r < size_t(s.B) * s.T; ++r)
    for (int e = v0; e < ld; ++e) ASSERT_EQ(to_float(fwd[r * ld + e]), to_float(xh[r * ld + e]));
}

TEST(KernelsRope, MatchesNaive) {
  for (const RopeCase s :
       {RopeCase{1, 1, 1, 1, 2}, RopeCase{2, 7, 4, 1, 8}, RopeCase{1, 70, 4, 2, 16},
        RopeCase{2, 133, 6, 6, 32}, RopeCase{1, 300, 8, 2, 128}}) {
    check_rope<float>(s);
    check_rope<bf16>(s);
    check_rope<fp16>(s);
  }
}

// rope_forward_at on rows [pos0, T) of one sequence rotates them as rope_forward does rows
// pos0 .. T - 1 of the whole sequence, bit for bit (the same angles, the same element math).
TEST(KernelsRope, AtAnOffsetEqualsTheWholeSequencesRows) {
  const RopeCase s{1, 45, 4, 2, 16};
  const int ld = (s.NH + 2 * s.G) * s.hd;
  const auto x = random_floats(size_t(s.T) * ld, 15);
  auto whole = x;
  cpu::Kernels::rope_forward(whole.data(), 1, s.T, s.NH, s.G, s.hd, rope_freqs(s.hd, 500000.0));
  for (int pos0 : {0, 1, 17, s.T - 1}) {
    std::vector<float> rows(x.begin() + std::ptrdiff_t(pos0) * ld, x.end());
    cpu::Kernels::rope_forward_at(rows.data(), s.T - pos0, pos0, s.NH, s.G, s.hd,
                                  rope_freqs(s.hd, 500000.0));
    for (size_t i = 0; i < rows.size(); ++i)
      ASSERT_EQ(rows[i], whole[size_t(pos0) * ld + i]) << "pos0 " << pos0 << " element " << i;
  }
}

// Backward is the transpose of forward: <rope(x), y> = <x, rope_backward(y)>, and
// rope_backward(rope(x)) = x.
TEST(KernelsRope, BackwardIsTheTranspose) {
  const RopeCase s{2, 37, 4, 2, 16};
  const size_t n = size_t(s.B) * s.T * (s.NH + 2 * s.G) * s.hd;
  auto x = random_floats(n, 13), y = random_floats(n, 14);
  auto rx = x, ry = y;
  cpu::Kernels::rope_forward(rx.data(), s.B, s.T, s.NH, s.G, s.hd, rope_freqs(s.hd, 500000.0));
  cpu::Kernels::rope_backward(ry.data(), s.B, s.T, s.NH, s.G, s.hd, rope_freqs(s.hd, 500000.0));
  double a = 0, b = 0;
  for (size_t i = 0; i < n; ++i) a += double(rx[i]) * y[i], b += double(x[i]) * ry[i];
  EXPECT_NEAR(a, b, 1e-4 * std::fabs(a) + 1e-4);
  cpu::Kernels::rope_backward(rx.data(), s.B, s.T, s.NH, s.G, s.hd, rope_freqs(s.hd, 500000.0));
  EXPECT_TRUE(all_close(rx, to_double(x), 1e-5, 1e-6));
}

}  // namespace
}  // namespace zt
