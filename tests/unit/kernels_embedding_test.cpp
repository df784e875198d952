// Token + position embedding forward/backward, with a vocab-parallel shard [v_begin, +v_local).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using testing::all_close;
using testing::random_floats;

struct EmbCase {
  int B, T, C, V, v_begin, v_local;
};

class KernelsEmbedding : public ::testing::TestWithParam<EmbCase> {};

std::vector<int32_t> make_tokens(int n, int V, uint32_t seed) {
  std::vector<int32_t> t(n);
  uint32_t s = seed;
  for (auto& x : t) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<int32_t>((s >> 8) % uint32_t(V));
  }
  if (n > 3) t[1] = t[3];  // a repeated token
  return t;
}

TEST_P(KernelsEmbedding, Forward) {
  const auto [B, T, C, V, vb, vl] = GetParam();
  const auto tok = make_tokens(B * T, V, 5);
  const auto wte = random_floats(size_t(vl) * C, 1), wpe = random_floats(size_t(T) * C, 2);
  for (bool pos : {true, false}) {
    std::vector<float> out(size_t(B) * T * C, 7.0f);
    cpu::Kernels::embedding_forward(out.data(), tok.data(), wte.data(), pos ? wpe.data() : nullptr,
                                    B, T, C, vb, vl);
    std::vector<float> want(out.size());
    for (int bt = 0; bt < B * T; ++bt)
      for (int c = 0; c < C; ++c) {
        const int r = tok[bt] - vb;
        const float e = (r >= 0 && r < vl) ? wte[size_t(r) * C + c] : 0.0f;
        want[size_t(bt) * C + c] = pos ? e + wpe[size_t(bt % T) * C + c] : e;
      }
    EXPECT_TRUE(all_close(out, want, 0, 0)) << "wpe=" << pos;
  }
}

TEST_P(KernelsEmbedding, BackwardAccumulates) {
  const auto [B, T, C, V, vb, vl] = GetParam();
  const auto tok = make_tokens(B * T, V, 6);
  const auto dout = random_floats(size_t(B) * T * C, 3);
  const auto dwte0 = random_floats(size_t(vl) * C, 4), dwpe0 = random_floats(size_t(T) * C, 5);
  std::vector<double> wte_want(dwte0.begin(), dwte0.end()), wpe_want(dwpe0.begin(), dwpe0.end());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const int bt = b * T + t, r = tok[bt] - vb;
      for (int c = 0; c < C; ++c) {
        const double g = dout[size_t(bt) * C + c];
        if (r >= 0 && r < vl) wte_want[size_t(r) * C + c] += g;
        wpe_want[size_t(t) * C + c] += g;
      }
    }
  auto dwte = dwte0, dwpe = dwpe0;
  cpu::Kernels::embedding_backward(dwte.data(), dwpe.data(), dout.data(), tok.data(), B, T, C, vb,
                                   vl);
  EXPECT_TRUE(all_close(dwte, wte_want, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(dwpe, wpe_want, 1e-6, 1e-6));
  dwte = dwte0;
  cpu::Kernels::embedding_backward(dwte.data(), nullptr, dout.data(), tok.data(), B, T, C, vb, vl);
  EXPECT_TRUE(all_close(dwte, wte_want, 1e-6, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(Shapes, KernelsEmbedding,
                         ::testing::Values(EmbCase{2, 7, 12, 50, 0, 50},     // whole vocab
                                           EmbCase{3, 5, 130, 40, 10, 17},   // a shard
                                           EmbCase{4, 64, 200, 300, 0, 150}  // parallel path
                                           ));

}  // namespace
}  // namespace zt
