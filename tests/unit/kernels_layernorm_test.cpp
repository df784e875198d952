// LayerNorm forward against a double reference; backward against finite differences of it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using testing::all_close;
using testing::finite_diff;
using testing::max_abs;
using testing::random_floats;
using testing::to_double;

void ref_layernorm(std::vector<double>& out, std::vector<double>& mean, std::vector<double>& rstd,
                   const std::vector<double>& x, const std::vector<double>& w,
                   const std::vector<double>& b, int N, int C) {
  out.assign(size_t(N) * C, 0);
  mean.assign(N, 0);
  rstd.assign(N, 0);
  for (int n = 0; n < N; ++n) {
    double mu = 0, var = 0;
    for (int c = 0; c < C; ++c) mu += x[size_t(n) * C + c];
    mu /= C;
    for (int c = 0; c < C; ++c) var += (x[size_t(n) * C + c] - mu) * (x[size_t(n) * C + c] - mu);
    var /= C;
    const double rs = 1.0 / std::sqrt(var + 1e-5);
    for (int c = 0; c < C; ++c)
      out[size_t(n) * C + c] = (x[size_t(n) * C + c] - mu) * rs * w[c] + b[c];
    mean[n] = mu;
    rstd[n] = rs;
  }
}

// Analytic backward in double (checked against finite differences below).
void ref_layernorm_backward(std::vector<double>& dx, std::vector<double>& dw,
                            std::vector<double>& db, const std::vector<float>& dout,
                            const std::vector<float>& x, const std::vector<float>& w, int N,
                            int C) {
  std::vector<double> o, m, r;
  std::vector<double> xd(x.begin(), x.end()), wd(w.begin(), w.end()), bd(C, 0.0);
  ref_layernorm(o, m, r, xd, wd, bd, N, C);
  dx.assign(size_t(N) * C, 0);
  dw.assign(C, 0);
  db.assign(C, 0);
  for (int n = 0; n < N; ++n) {
    double mg = 0, mgx = 0;
    for (int c = 0; c < C; ++c) {
      const size_t i = size_t(n) * C + c;
      const double xh = (x[i] - m[n]) * r[n], g = dout[i] * wd[c];
      mg += g / C;
      mgx += g * xh / C;
      dw[c] += dout[i] * xh;
      db[c] += dout[i];
    }
    for (int c = 0; c < C; ++c) {
      const size_t i = size_t(n) * C + c;
      const double xh = (x[i] - m[n]) * r[n], g = dout[i] * wd[c];
      dx[i] = r[n] * (g - mg - xh * mgx);
    }
  }
}

struct LnCase {
  int N, C;
};
class KernelsLayerNorm : public ::testing::TestWithParam<LnCase> {};

TEST_P(KernelsLayerNorm, Forward) {
  const auto [N, C] = GetParam();
  auto x = random_floats(size_t(N) * C, 1, -2, 3);
  for (int c = 0; c < C; ++c) x[c] += 100.0f;  // a row with a large mean
  const auto w = random_floats(C, 2, 0.5f, 1.5f), b = random_floats(C, 3);
  std::vector<float> out(size_t(N) * C), mean(N), rstd(N);
  cpu::Kernels::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                  b.data(), N, C);
  std::vector<double> o, m, r;
  ref_layernorm(o, m, r, to_double(x), to_double(w), to_double(b), N, C);
  EXPECT_TRUE(all_close(out, o, 2e-5, 2e-5));
  EXPECT_TRUE(all_close(mean, m, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(rstd, r, 2e-5, 0));
}

TEST_P(KernelsLayerNorm, Backward) {
  const auto [N, C] = GetParam();
  const auto x = random_floats(size_t(N) * C, 4, -2, 2);
  const auto w = random_floats(C, 5, 0.5f, 1.5f), b = random_floats(C, 6);
  const auto R = random_floats(size_t(N) * C, 7);  // L = sum R * out, so dout = R
  std::vector<float> out(size_t(N) * C), mean(N), rstd(N);
  cpu::Kernels::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                  b.data(), N, C);
  const auto dx0 = random_floats(size_t(N) * C, 8), dw0 = random_floats(C, 9),
             db0 = random_floats(C, 10);
  auto dx = dx0, dw = dw0, db = db0;
  cpu::Kernels::layernorm_backward(dx.data(), dw.data(), db.data(), R.data(), x.data(), w.data(),
                                   mean.data(), rstd.data(), N, C);

  const auto xd = to_double(x), wd = to_double(w), bd = to_double(b), Rd = to_double(R);
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww,
                  const std::vector<double>& bb) {
    std::vector<double> o, m, r;
    ref_layernorm(o, m, r, xx, ww, bb, N, C);
    double L = 0;
    for (size_t i = 0; i < o.size(); ++i) L += Rd[i] * o[i];
    return L;
  };
  std::vector<double> gx, gw, gb;
  ref_layernorm_backward(gx, gw, gb, R, x, w, N, C);
  if (int64_t{N} * C <= 4096) {  // the analytic reference itself, against the definition
    std::vector<double> ax, aw, ab;
    ref_layernorm_backward(ax, aw, ab, R, x, w, N, C);
    auto fx = finite_diff([&](const std::vector<double>& v) { return loss(v, wd, bd); }, xd);
    auto fw = finite_diff([&](const std::vector<double>& v) { return loss(xd, v, bd); }, wd);
    auto fb = finite_diff([&](const std::vector<double>& v) { return loss(xd, wd, v); }, bd);
    EXPECT_TRUE(all_close(ax, fx, 1e-6, 1e-7 * max_abs(fx)));
    EXPECT_TRUE(all_close(aw, fw, 1e-6, 1e-7 * max_abs(fw)));
    EXPECT_TRUE(all_close(ab, fb, 1e-6, 1e-7 * max_abs(fb)));
  }
  for (size_t i = 0; i < gx.size(); ++i) gx[i] += dx0[i];
  for (int c = 0; c < C; ++c) gw[c] += dw0[c], gb[c] += db0[c];
  EXPECT_TRUE(all_close(dx, gx, 1e-4, 1e-4 * max_abs(gx)));
  EXPECT_TRUE(all_close(dw, gw, 1e-4, 1e-4 * max_abs(gw)));
  EXPECT_TRUE(all_close(db, gb, 1e-4, 1e-4 * max_abs(gb)));
}

INSTANTIATE_TEST_SUITE_P(Shapes, KernelsLayerNorm,
                         ::testing::Values(LnCase{1, 1}, LnCase{5, 12}, LnCase{3, 67},
                                           LnCase{64, 520}));

}  // namespace
}  // namespace zt
