// The fused CPU kernels against the unfused ops they replace, bitwise, in fp32, bf16 and fp16:
//   linear_gelu_forward            = linear_forward, gelu_forward
//   linear_backward_gelu           = linear_backward's dx, gelu_backward
//   dropout_add_layernorm_forward  = dropout_add_forward, layernorm_forward
// The model calls the fused ops (src/model/transformer_layer.cpp), so these equalities are what
// keeps its CPU results (and the PyTorch reference tests) unchanged. The shapes are large enough
// for the OpenMP paths (kernels/cpu/parallel.h) and include a row length that is no multiple of
// the vector lanes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/core/half.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using K = cpu::Kernels;
using testing::same_bits;

template <typename T>
std::vector<T> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<T> v(n);
  for (auto& x : v) x = from_float<T>(dist(gen));
  return v;
}

template <typename T>
class Fused : public ::testing::Test {};
using Types = ::testing::Types<float, bf16, fp16>;
TYPED_TEST_SUITE(Fused, Types);

TYPED_TEST(Fused, LinearGeluForwardIsLinearThenGelu) {
  using T = TypeParam;
  for (const int out : {256, 100}) {
    const int N = 96, in = 72;
    const auto x = random_values<T>(size_t(N) * in, 1),
               w = random_values<T>(size_t(out) * in, 2, 0.2f);
    const auto b = random_values<T>(out, 3);
    for (const bool bias : {true, false}) {
      const T* bp = bias ? b.data() : nullptr;
      std::vector<T> y(size_t(N) * out), pre(y.size()), y_ref(y.size()), pre_ref(y.size());
      K::linear_gelu_forward(y.data(), pre.data(), x.data(), w.data(), bp, N, in, out);
      K::linear_forward(pre_ref.data(), x.data(), w.data(), bp, N, in, out);
      K::gelu_forward(y_ref.data(), pre_ref.data(), int64_t(y.size()));
      EXPECT_TRUE(same_bits(pre, pre_ref)) << "pre, out " << out << " bias " << bias;
      EXPECT_TRUE(same_bits(y, y_ref)) << "y, out " << out << " bias " << bias;
    }
  }
}

TYPED_TEST(Fused, LinearBackwardGeluIsInputGradientThenGeluBackward) {
  using T = TypeParam;
  const int N = 96, in = 260, out = 72;  // in: the fc width the GeLU runs over
  const auto dy = random_values<T>(size_t(N) * out, 4), w = random_values<T>(size_t(out) * in, 5);
  const auto pre = random_values<T>(size_t(N) * in, 6, 2.0f);
  std::vector<T> dx(size_t(N) * in), dx_ref(dx.size());
  std::vector<float> dw(size_t(out) * in, 0.0f);
  K::linear_backward_gelu(dx.data(), dy.data(), w.data(), pre.data(), N, in, out);
  K::linear_backward(dx_ref.data(), dw.data(), nullptr, dy.data(), pre.data(), w.data(), N, in, out,
                     false);
  K::gelu_backward(dx_ref.data(), pre.data(), dx_ref.data(), int64_t(dx_ref.size()));
  EXPECT_TRUE(same_bits(dx, dx_ref));
}

TYPED_TEST(Fused, DropoutAddLayernormIsDropoutAddThenLayernorm) {
  using T = TypeParam;
  for (const int C : {512, 77}) {
    const int N = 130;
    const size_t n = size_t(N) * C;
    const auto a = random_values<T>(n, 7), x = random_values<T>(n, 8);
    const auto w = random_values<T>(C, 9), b = random_values<T>(C, 10);
    for (const float p : {0.0f, 0.1f}) {
      const DropoutParams drop{p, 1234, 5678};
      std::vector<T> res(n), ln(n), res_ref(n), ln_ref(n);
      std::vector<float> mean(N), rstd(N), mean_ref(N), rstd_ref(N);
      K::dropout_add_layernorm_forward(res.data(), ln.data(), mean.data(), rstd.data(), a.data(),
                                       x.data(), w.data(), b.data(), N, C, drop);
      K::dropout_add_forward(res_ref.data(), a.data(), x.data(), int64_t(n), drop);
      K::layernorm_forward(ln_ref.data(), mean_ref.data(), rstd_ref.data(), res_ref.data(),
                           w.data(), b.data(), N, C);
      EXPECT_TRUE(same_bits(res, res_ref)) << "res, C " << C << " p " << p;
      EXPECT_TRUE(same_bits(ln, ln_ref)) << "ln, C " << C << " p " << p;
      EXPECT_TRUE(same_bits(mean, mean_ref)) << "mean, C " << C << " p " << p;
      EXPECT_TRUE(same_bits(rstd, rstd_ref)) << "rstd, C " << C << " p " << p;
    }
  }
}

TEST(Fused, DropoutAddLayernormRejectsBadArguments) {
  std::vector<float> v(4, 0.0f), s(2, 0.0f);
  EXPECT_THROW(
      K::dropout_add_layernorm_forward(v.data(), v.data(), s.data(), s.data(), v.data(), v.data(),
                                       v.data(), v.data(), 2, 2, DropoutParams{1.0f, 0, 0}),
      std::exception);
  EXPECT_THROW(
      K::dropout_add_layernorm_forward(v.data(), v.data(), s.data(), s.data(), v.data(), v.data(),
                                       v.data(), v.data(), 0, 2, DropoutParams{}),
      std::exception);
}

}  // namespace
}  // namespace zt
