// Causal self-attention: forward against a double reference (with the same dropout mask),
// backward against central finite differences of that reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/common/dropout.h"
#include "kernels/cpu/ops.h"
#include "tests/unit/kernels_testing.h"

namespace zt {
namespace {

using testing::all_close;
using testing::finite_diff;
using testing::max_abs;
using testing::random_floats;
using testing::to_double;

struct AttnCase {
  int B, T, C, NH;
  float p;
};

// out[B,T,C] and the undropped probabilities att[B,NH,T,T]. The dropout counter of att
// element (b, h, i, j) is its flat index ((b*NH + h)*T + i)*T + j.
void ref_attention(std::vector<double>& out, std::vector<double>& att,
                   const std::vector<double>& qkv, const AttnCase& s, const DropoutParams& d) {
  const int B = s.B, T = s.T, C = s.C, NH = s.NH, hd = C / NH;
  out.assign(size_t(B) * T * C, 0);
  att.assign(size_t(B) * NH * T * T, 0);
  const double scale = 1.0 / std::sqrt(double(hd));
  auto at = [&](int b, int t, int part, int h, int e) {
    return qkv[(size_t(b) * T + t) * 3 * C + size_t(part) * C + size_t(h) * hd + e];
  };
  std::vector<double> row(T);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < T; ++i) {
        double mx = -1e300;
        for (int j = 0; j <= i; ++j) {
          double sdot = 0;
          for (int e = 0; e < hd; ++e) sdot += at(b, i, 0, h, e) * at(b, j, 1, h, e);
          row[j] = sdot * scale;
          mx = std::fmax(mx, row[j]);
        }
        double sum = 0;
        for (int j = 0; j <= i; ++j) sum += (row[j] = std::exp(row[j] - mx));
        const size_t base = ((size_t(b) * NH + h) * T + i) * T;
        for (int j = 0; j <= i; ++j) {
          const double p = row[j] / sum;
          att[base + j] = p;
          const double pd = p * dropout_scale(d, base + j);
          for (int e = 0; e < hd; ++e)
            out[(size_t(b) * T + i) * C + size_t(h) * hd + e] += pd * at(b, j, 2, h, e);
        }
      }
}

class KernelsAttention : public ::testing::TestWithParam<AttnCase> {};

TEST_P(KernelsAttention, ForwardMatchesReference) {
  const AttnCase s = GetParam();
  const DropoutParams d{s.p, 1234, 77};
  const auto qkv = random_floats(size_t(s.B) * s.T * 3 * s.C, 1, -1.5f, 1.5f);
  std::vector<float> out(size_t(s.B) * s.T * s.C), att(size_t(s.B) * s.NH * s.T * s.T, 9.0f);
  cpu::Kernels::attention_forward(out.data(), att.data(), nullptr, qkv.data(), s.B, s.T, s.C, s.NH,
                                  d);
  std::vector<double> ow, aw;
  ref_attention(ow, aw, to_double(qkv), s, d);
  EXPECT_TRUE(all_close(att, aw, 1e-5, 1e-7));
  EXPECT_TRUE(all_close(out, ow, 1e-5, 1e-5));
  // Above the diagonal: exactly zero.
  for (int bh = 0; bh < s.B * s.NH; ++bh)
    for (int i = 0; i < s.T; ++i)
      for (int j = i + 1; j < s.T; ++j)
        ASSERT_EQ(att[(size_t(bh) * s.T + i) * s.T + j], 0.0f) << bh << " " << i << " " << j;
}

class KernelsAttentionGrad : public ::testing::TestWithParam<AttnCase> {};

TEST_P(KernelsAttentionGrad, BackwardMatchesFiniteDifferences) {
  const AttnCase s = GetParam();
  const DropoutParams d{s.p, 99, 5};
  const auto qkv = random_floats(size_t(s.B) * s.T * 3 * s.C, 2, -1.5f, 1.5f);
  const auto R = random_floats(size_t(s.B) * s.T * s.C, 3);  // L = sum R * out
  std::vector<float> out(R.size()), att(size_t(s.B) * s.NH * s.T * s.T);
  cpu::Kernels::attention_forward(out.data(), att.data(), nullptr, qkv.data(), s.B, s.T, s.C, s.NH,
                                  d);
  std::vector<float> dqkv(qkv.size(), 5.0f), scratch(att.size(), -3.0f);
  cpu::Kernels::attention_backward(dqkv.data(), scratch.data(), R.data(), qkv.data(), att.data(),
                                   s.B, s.T, s.C, s.NH, d);
  const auto Rd = to_double(R);
  const auto g = finite_diff(
      [&](const std::vector<double>& x) {
        std::vector<double> o, a;
        ref_attention(o, a, x, s, d);
        double L = 0;
        for (size_t i = 0; i < o.size(); ++i) L += Rd[i] * o[i];
        return L;
      },
      to_double(qkv));
  EXPECT_TRUE(all_close(dqkv, g, 1e-4, 1e-4 * max_abs(g)));
}

const auto kSmallShapes = ::testing::Values(AttnCase{1, 1, 4, 1, 0.0f},   // one token
                                            AttnCase{2, 7, 12, 3, 0.0f},  // odd sizes
                                            AttnCase{2, 7, 12, 3, 0.3f},  // with dropout
                                            AttnCase{1, 70, 8, 2, 0.0f},  // two row blocks
                                            AttnCase{1, 70, 8, 2, 0.2f});
INSTANTIATE_TEST_SUITE_P(Small, KernelsAttention, kSmallShapes);
INSTANTIATE_TEST_SUITE_P(ThreeBlocks, KernelsAttention,
                         ::testing::Values(AttnCase{2, 130, 64, 4, 0.1f}));
// Finite differences (2 forward passes per input) only on the small shapes.
INSTANTIATE_TEST_SUITE_P(Small, KernelsAttentionGrad, kSmallShapes);

TEST(KernelsAttention, DropoutReproducibleAndOffsetDependent) {
  // (The forward test above already pins the counter to the flat att index.)
  const AttnCase s{1, 16, 8, 2, 0.5f};
  const auto qkv = random_floats(size_t(s.B) * s.T * 3 * s.C, 4);
  std::vector<float> o1(size_t(s.T) * s.C), o2(o1.size()), o3(o1.size()),
      att(size_t(s.NH) * s.T * s.T);
  cpu::Kernels::attention_forward(o1.data(), att.data(), nullptr, qkv.data(), s.B, s.T, s.C, s.NH,
                                  {0.5f, 1, 0});
  cpu::Kernels::attention_forward(o2.data(), att.data(), nullptr, qkv.data(), s.B, s.T, s.C, s.NH,
                                  {0.5f, 1, 0});
  cpu::Kernels::attention_forward(o3.data(), att.data(), nullptr, qkv.data(), s.B, s.T, s.C, s.NH,
                                  {0.5f, 1, 1});
  EXPECT_TRUE(testing::bitwise_equal(o1, o2));
  EXPECT_FALSE(testing::bitwise_equal(o1, o3));
}

}  // namespace
}  // namespace zt
