// attention_cached_forward (generation against a key/value cache) against attention_forward over
// the whole sequence: the new rows at positions past .. T-1, attending to the cached keys and
// values of every position, are the full attention's rows past .. T-1 (no dropout). fp32 to
// 1e-5 relative (the same math in another summation order); bf16 / fp16 to a few ulps of T (the
// full attention rounds its probabilities to T as GEMM operands, the cached one does not).
// Shapes: one new row (a decoding step), several (a prompt after a prefix), all (a prompt),
// several heads, a head size not a multiple of 16, a sequence longer than one 64-key tile.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "kernels/cpu/ops.h"
#include "tests/support/half_vectors.h"
#include "tests/support/kernels_testing.h"
#include "tests/support/max_rel_error.h"

namespace zt {
namespace {

struct Case {
  int T, C, NH;
};

// k or v ([T, C]) of a [T, 3C] qkv: part 1 or 2.
template <typename H>
std::vector<H> part(const std::vector<H>& qkv, int T, int C, int which) {
  std::vector<H> out(size_t(T) * C);
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c)
      out[size_t(t) * C + c] = qkv[size_t(t) * 3 * C + size_t(which) * C + c];
  return out;
}

template <typename H>
void check(const Case& s, double tol) {
  const auto qkv = test::narrow<H>(testing::random_floats(size_t(s.T) * 3 * s.C, 31, -2.f, 2.f));
  std::vector<H> full(size_t(s.T) * s.C);
  std::vector<float> lse(size_t(s.NH) * s.T);
  cpu::Kernels::attention_forward(full.data(), lse.data(), qkv.data(), 1, s.T, s.C, s.NH, s.NH,
                                  DropoutParams{});
  const auto k = part(qkv, s.T, s.C, 1), v = part(qkv, s.T, s.C, 2);
  for (int past : {0, s.T / 2, s.T - 1}) {
    const int n = s.T - past;
    std::vector<H> out(size_t(n) * s.C);
    cpu::Kernels::attention_cached_forward(out.data(), qkv.data() + size_t(past) * 3 * s.C, 3 * s.C,
                                           k.data(), v.data(), n, past, s.C, s.NH);
    const std::vector<float> all = test::widen(full);
    const std::vector<float> want(all.begin() + std::ptrdiff_t(past) * s.C, all.end());
    EXPECT_LE(test::max_rel_error(test::widen(out), want), tol)
        << "T=" << s.T << " C=" << s.C << " NH=" << s.NH << " past=" << past;
  }
}

const Case kCases[] = {{1, 8, 1}, {9, 16, 2}, {70, 48, 4}, {130, 40, 2}};

TEST(AttentionCached, Fp32EqualsTheFullAttentionsRows) {
  for (const Case& s : kCases) check<float>(s, 1e-5);
}

TEST(AttentionCached, HalfEqualsTheFullAttentionsRows) {
  for (const Case& s : kCases) {
    check<bf16>(s, 2e-2);
    check<fp16>(s, 3e-3);
  }
}

}  // namespace
}  // namespace zt
