// Every CPU kernel in bf16 and fp16 against the fp32 kernel run on the same (half-representable)
// inputs. The half kernels widen on load, compute in fp32 and round once on store, so:
//   - element-wise kernels, layernorm, embedding and cross-entropy: the half output is exactly
//     the fp32 output rounded to nearest even, and every fp32 output (statistics, parameter
//     gradients, losses) is bit-identical;
//   - linear (GEMM with fp32 accumulation, one rounding of the output): max |half - fp32| <=
//     one half ulp of max |fp32| plus fp32 slack: 2^-8 (bf16) / 2^-11 (fp16) relative;
//   - attention: the dropped P and dS are rounded to T between its GEMMs (the products that
//     follow see the rounded values), so the error is a few ulps of T: 2e-2 (bf16) / 3e-3 (fp16)
//     relative, measured 3.3e-3 (bf16) / 3.8e-4 (fp16) on the shapes below (the test prints them).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/core/half.h"
#include "tests/support/half_vectors.h"
#include "tests/support/max_rel_error.h"

namespace zt {
namespace {

using test::widen;

// Random values already representable in H, returned both as H and widened.
template <typename H>
struct Input {
  std::vector<H> h;
  std::vector<float> f;
  Input(size_t n, uint32_t seed, float scale = 1.0f) : h(n), f(n) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    for (size_t i = 0; i < n; ++i) f[i] = to_float(h[i] = from_float<H>(dist(gen)));
  }
};

// The half result equals the fp32 result rounded once, bit for bit.
template <typename H>
void expect_rounded(const std::vector<H>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i].bits, from_float<H>(want[i]).bits)
        << what << " element " << i << ": " << to_float(got[i]) << " vs " << want[i];
}

void expect_same(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
}

template <typename H>
class KernelsHalf : public ::testing::Test {};
using HalfTypes = ::testing::Types<bf16, fp16>;
TYPED_TEST_SUITE(KernelsHalf, HalfTypes);

template <typename H>
double linear_tolerance() {
  return std::is_same_v<H, bf16> ? 1.0 / 256 : 1.0 / 2048;
}
template <typename H>
double attention_tolerance() {
  return std::is_same_v<H, bf16> ? 2e-2 : 3e-3;
}

TYPED_TEST(KernelsHalf, ElementwiseRoundOnce) {
  using H = TypeParam;
  const int64_t n = 5000;
  const Input<H> x(n, 1), y(n, 2), d(n, 3);
  std::vector<H> out(n);
  std::vector<float> want(n);
  cpu::Kernels::gelu_forward(out.data(), x.h.data(), n);
  cpu::Kernels::gelu_forward(want.data(), x.f.data(), n);
  expect_rounded(out, want, "gelu_forward");
  cpu::Kernels::gelu_backward(out.data(), x.h.data(), d.h.data(), n);
  cpu::Kernels::gelu_backward(want.data(), x.f.data(), d.f.data(), n);
  expect_rounded(out, want, "gelu_backward");
  const DropoutParams drop{0.1f, 1234, 77};
  cpu::Kernels::dropout_add_forward(out.data(), x.h.data(), y.h.data(), n, drop);
  cpu::Kernels::dropout_add_forward(want.data(), x.f.data(), y.f.data(), n, drop);
  expect_rounded(out, want, "dropout_add_forward");
  cpu::Kernels::dropout_backward(out.data(), d.h.data(), n, drop);
  cpu::Kernels::dropout_backward(want.data(), d.f.data(), n, drop);
  expect_rounded(out, want, "dropout_backward");
  std::vector<H> acc = x.h;
  std::vector<float> accf = x.f;
  cpu::Kernels::add_inplace(acc.data(), y.h.data(), n);
  cpu::Kernels::add_inplace(accf.data(), y.f.data(), n);
  expect_rounded(acc, accf, "add_inplace");
  acc = x.h;
  accf = x.f;
  cpu::Kernels::add_broadcast(acc.data(), y.h.data(), 50, 100);
  cpu::Kernels::add_broadcast(accf.data(), y.f.data(), 50, 100);
  expect_rounded(acc, accf, "add_broadcast");
}

TYPED_TEST(KernelsHalf, LayernormRoundsOnceAndKeepsFp32Statistics) {
  using H = TypeParam;
  const int N = 37, C = 96;
  const Input<H> x(size_t(N) * C, 4, 2.0f), dout(size_t(N) * C, 5), dx0(size_t(N) * C, 6);
  const Input<H> w(C, 7, 0.5f), b(C, 8, 0.1f);
  std::vector<H> out(size_t(N) * C);
  std::vector<float> want(size_t(N) * C), mean(N), rstd(N), mean_f(N), rstd_f(N);
  cpu::Kernels::layernorm_forward(out.data(), mean.data(), rstd.data(), x.h.data(), w.h.data(),
                                  b.h.data(), N, C);
  cpu::Kernels::layernorm_forward(want.data(), mean_f.data(), rstd_f.data(), x.f.data(), w.f.data(),
                                  b.f.data(), N, C);
  expect_rounded(out, want, "layernorm_forward");
  expect_same(mean, mean_f, "mean");
  expect_same(rstd, rstd_f, "rstd");
  std::vector<H> dx = dx0.h;
  std::vector<float> dxf = dx0.f, dw(C, 0.5f), db(C, -0.25f), dwf = dw, dbf = db;
  cpu::Kernels::layernorm_backward(dx.data(), dw.data(), db.data(), dout.h.data(), x.h.data(),
                                   w.h.data(), mean.data(), rstd.data(), N, C);
  cpu::Kernels::layernorm_backward(dxf.data(), dwf.data(), dbf.data(), dout.f.data(), x.f.data(),
                                   w.f.data(), mean.data(), rstd.data(), N, C);
  expect_rounded(dx, dxf, "layernorm_backward dx");
  expect_same(dw, dwf, "layernorm_backward dw");
  expect_same(db, dbf, "layernorm_backward db");
}

TYPED_TEST(KernelsHalf, EmbeddingAndCrossEntropy) {
  using H = TypeParam;
  const int B = 3, T = 7, C = 40, V = 50, v_real = 45;
  const Input<H> wte(size_t(V) * C, 9), wpe(size_t(T) * C, 10), dout(size_t(B) * T * C, 11);
  std::vector<int32_t> tokens(size_t(B) * T);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7 + 3) % V);
  std::vector<H> out(size_t(B) * T * C);
  std::vector<float> want(out.size());
  cpu::Kernels::embedding_forward(out.data(), tokens.data(), wte.h.data(), wpe.h.data(), B, T, C, 0,
                                  V);
  cpu::Kernels::embedding_forward(want.data(), tokens.data(), wte.f.data(), wpe.f.data(), B, T, C,
                                  0, V);
  expect_rounded(out, want, "embedding_forward");
  std::vector<float> g(size_t(V) * C, 0.0f), gp(size_t(T) * C, 0.0f), gf = g, gpf = gp;
  cpu::Kernels::embedding_backward(g.data(), gp.data(), dout.h.data(), tokens.data(), B, T, C, 0,
                                   V);
  cpu::Kernels::embedding_backward(gf.data(), gpf.data(), dout.f.data(), tokens.data(), B, T, C, 0,
                                   V);
  expect_same(g, gf, "embedding_backward dwte");
  expect_same(gp, gpf, "embedding_backward dwpe");

  const int N = B * T;
  std::vector<int32_t> targets(tokens.size());
  for (size_t i = 0; i < targets.size(); ++i) targets[i] = tokens[i] % v_real;
  Input<H> logits(size_t(N) * V, 12, 3.0f);
  std::vector<float> lf = logits.f, loss(N), loss_f(N);
  cpu::Kernels::softmax_cross_entropy(logits.h.data(), loss.data(), targets.data(), N, V, v_real,
                                      0.5f);
  cpu::Kernels::softmax_cross_entropy(lf.data(), loss_f.data(), targets.data(), N, V, v_real, 0.5f);
  expect_same(loss, loss_f, "cross-entropy losses");
  expect_rounded(logits.h, lf, "cross-entropy dlogits");
}

TYPED_TEST(KernelsHalf, LinearWithinOneRounding) {
  using H = TypeParam;
  const int N = 70, in = 48, out = 56;
  const Input<H> x(size_t(N) * in, 13), w(size_t(out) * in, 14, 0.1f), b(out, 15, 0.1f);
  const Input<H> dy(size_t(N) * out, 16);
  std::vector<H> y(size_t(N) * out);
  std::vector<float> yf(y.size()), logits(y.size());
  cpu::Kernels::linear_forward(y.data(), x.h.data(), w.h.data(), b.h.data(), N, in, out);
  cpu::Kernels::linear_forward(yf.data(), x.f.data(), w.f.data(), b.f.data(), N, in, out);
  const std::vector<float> yw = widen(y);
  EXPECT_LE(test::max_rel_error(yw.data(), yf.data(), yf.size()), linear_tolerance<H>());
  // The head's form: half operands, fp32 output.
  cpu::Kernels::linear_forward(logits.data(), x.h.data(), w.h.data(),
                               static_cast<const H*>(nullptr), N, in, out);
  cpu::Kernels::linear_forward(yf.data(), x.f.data(), w.f.data(),
                               static_cast<const float*>(nullptr), N, in, out);
  EXPECT_LE(test::max_rel_error(logits.data(), yf.data(), yf.size()), 1e-5);
  std::vector<H> dx(size_t(N) * in);
  std::vector<float> dxf(dx.size()), dw(size_t(out) * in, 0.0f), db(out, 0.0f), dwf = dw, dbf = db;
  cpu::Kernels::linear_backward(dx.data(), dw.data(), db.data(), dy.h.data(), x.h.data(),
                                w.h.data(), N, in, out, false);
  cpu::Kernels::linear_backward(dxf.data(), dwf.data(), dbf.data(), dy.f.data(), x.f.data(),
                                w.f.data(), N, in, out, false);
  const std::vector<float> dxw = widen(dx);
  EXPECT_LE(test::max_rel_error(dxw.data(), dxf.data(), dxf.size()), linear_tolerance<H>());
  // Parameter gradients accumulate in fp32 from exact products: fp32 summation order only.
  EXPECT_LE(test::max_rel_error(dw.data(), dwf.data(), dwf.size()), 1e-5);
  expect_same(db, dbf, "linear_backward db");
}

TYPED_TEST(KernelsHalf, AttentionWithinAFewRoundings) {
  using H = TypeParam;
  const int B = 2, T = 70, C = 48, NH = 4;
  const DropoutParams drop{0.1f, 99, 5};
  const Input<H> qkv(size_t(B) * T * 3 * C, 17), dout(size_t(B) * T * C, 18);
  const size_t rows = size_t(B) * NH * T;
  std::vector<H> out(size_t(B) * T * C), dqkv(qkv.h.size());
  std::vector<float> outf(out.size()), dqkvf(dqkv.size()), lse(rows), lsef(rows), delta(rows);
  cpu::Kernels::attention_forward(out.data(), lse.data(), qkv.h.data(), B, T, C, NH, NH, drop);
  cpu::Kernels::attention_forward(outf.data(), lsef.data(), qkv.f.data(), B, T, C, NH, NH, drop);
  const std::vector<float> ow = widen(out);
  // The statistics are fp32 on the same (exactly widened) inputs: fp32 summation order only.
  const double e_lse = test::max_rel_error(lse.data(), lsef.data(), rows);
  const double e_out = test::max_rel_error(ow.data(), outf.data(), outf.size());
  EXPECT_LE(e_lse, 1e-6) << "log-sum-exp: fp32 statistics";
  EXPECT_LE(e_out, attention_tolerance<H>());
  cpu::Kernels::attention_backward(dqkv.data(), delta.data(), dout.h.data(), qkv.h.data(),
                                   out.data(), lse.data(), B, T, C, NH, NH, drop);
  cpu::Kernels::attention_backward(dqkvf.data(), delta.data(), dout.f.data(), qkv.f.data(),
                                   outf.data(), lsef.data(), B, T, C, NH, NH, drop);
  const std::vector<float> dw = widen(dqkv);
  const double e_grad = test::max_rel_error(dw.data(), dqkvf.data(), dqkvf.size());
  EXPECT_LE(e_grad, attention_tolerance<H>());
  std::printf("%s attention vs fp32: lse %.2e out %.2e dqkv %.2e (tolerance %.0e)\n",
              std::is_same_v<H, bf16> ? "bf16" : "fp16", e_lse, e_out, e_grad,
              attention_tolerance<H>());
}

}  // namespace
}  // namespace zt
