// attention_cached_forward (generation against a key/value cache) against attention_forward over
// the whole sequence: the new rows at positions past .. T-1, attending to the cached keys and
// values of every position, are the full attention's rows past .. T-1 (no dropout). fp32 to
// 1e-5 relative (the same math in another summation order); bf16 / fp16 to a few ulps of T (the
// full attention rounds its probabilities to T as GEMM operands, the cached one does not).
// Shapes: one new row (a decoding step), several (a prompt after a prefix), all (a prompt),
// several heads, a head size not a multiple of 16, a sequence longer than one 64-key tile; grouped-
// query attention (fewer key/value heads than query heads: 1, and several per group) against the
// full attention and against a naive double-precision reference that repeats the shared heads.
#include <gtest/gtest.h>

#include <cmath>
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
  int NKV = 0;  // 0: NH (multi-head attention)
  int kv() const { return NKV > 0 ? NKV : NH; }
  int Ckv() const { return kv() * (C / NH); }
  int W() const { return C + 2 * Ckv(); }  // a qkv row: q | k | v
};

// k or v ([T, Ckv]) of a [T, C + 2Ckv] qkv: part 1 or 2.
template <typename H>
std::vector<H> part(const std::vector<H>& qkv, const Case& s, int which) {
  const int ckv = s.Ckv();
  std::vector<H> out(size_t(s.T) * ckv);
  for (int t = 0; t < s.T; ++t)
    for (int c = 0; c < ckv; ++c)
      out[size_t(t) * ckv + c] = qkv[size_t(t) * s.W() + s.C + size_t(which - 1) * ckv + c];
  return out;
}

template <typename H>
void check(const Case& s, double tol) {
  const auto qkv = test::narrow<H>(testing::random_floats(size_t(s.T) * s.W(), 31, -2.f, 2.f));
  std::vector<H> full(size_t(s.T) * s.C);
  std::vector<float> lse(size_t(s.NH) * s.T);
  cpu::Kernels::attention_forward(full.data(), lse.data(), qkv.data(), 1, s.T, s.C, s.NH, s.kv(),
                                  DropoutParams{});
  const auto k = part(qkv, s, 1), v = part(qkv, s, 2);
  for (int past : {0, s.T / 2, s.T - 1}) {
    const int n = s.T - past;
    std::vector<H> out(size_t(n) * s.C);
    cpu::Kernels::attention_cached_forward(out.data(), qkv.data() + size_t(past) * s.W(), s.W(),
                                           k.data(), v.data(), n, past, s.C, s.NH, s.kv());
    const std::vector<float> all = test::widen(full);
    const std::vector<float> want(all.begin() + std::ptrdiff_t(past) * s.C, all.end());
    EXPECT_LE(test::max_rel_error(test::widen(out), want), tol)
        << "T=" << s.T << " C=" << s.C << " NH=" << s.NH << " NKV=" << s.kv() << " past=" << past;
  }
}

// Causal attention of the rows past .. T-1 with every query head's key/value head repeated into a
// [T, C] k and v first (what grouped-query attention means), in double.
std::vector<float> naive(const std::vector<float>& qkv, const Case& s, int past) {
  const int hd = s.C / s.NH, rep = s.NH / s.kv();
  std::vector<double> kr(size_t(s.T) * s.C), vr(size_t(s.T) * s.C);
  for (int t = 0; t < s.T; ++t)
    for (int h = 0; h < s.NH; ++h)
      for (int e = 0; e < hd; ++e) {
        const size_t src = size_t(t) * s.W() + size_t(h / rep) * hd + e;
        kr[size_t(t) * s.C + size_t(h) * hd + e] = qkv[src + s.C];
        vr[size_t(t) * s.C + size_t(h) * hd + e] = qkv[src + s.C + s.Ckv()];
      }
  std::vector<float> out;
  for (int i = past; i < s.T; ++i)
    for (int h = 0; h < s.NH; ++h) {
      std::vector<double> p(size_t(i) + 1);
      double m = -INFINITY, sum = 0;
      for (int j = 0; j <= i; ++j) {
        double d = 0;
        for (int e = 0; e < hd; ++e)
          d += double(qkv[size_t(i) * s.W() + size_t(h) * hd + e]) *
               kr[size_t(j) * s.C + size_t(h) * hd + e];
        p[size_t(j)] = d / std::sqrt(double(hd));
        m = std::max(m, p[size_t(j)]);
      }
      for (double& x : p) sum += (x = std::exp(x - m));
      for (int e = 0; e < hd; ++e) {
        double acc = 0;
        for (int j = 0; j <= i; ++j) acc += p[size_t(j)] * vr[size_t(j) * s.C + size_t(h) * hd + e];
        out.push_back(float(acc / sum));
      }
    }
  return out;
}

const Case kCases[] = {{1, 8, 1}, {9, 16, 2}, {70, 48, 4}, {130, 40, 2}};
// Grouped-query attention: one key/value head for all, groups of 2 and of 3 query heads.
const Case kGqaCases[] = {{9, 16, 4, 1}, {70, 48, 4, 2}, {37, 48, 6, 2}, {130, 40, 2, 1}};

TEST(AttentionCached, Fp32EqualsTheFullAttentionsRows) {
  for (const Case& s : kCases) check<float>(s, 1e-5);
}

TEST(AttentionCached, HalfEqualsTheFullAttentionsRows) {
  for (const Case& s : kCases) {
    check<bf16>(s, 2e-2);
    check<fp16>(s, 3e-3);
  }
}

TEST(AttentionCached, GroupedQueryEqualsTheFullAttentionsRows) {
  for (const Case& s : kGqaCases) {
    check<float>(s, 1e-5);
    check<bf16>(s, 2e-2);
    check<fp16>(s, 3e-3);
  }
}

TEST(AttentionCached, GroupedQueryEqualsANaiveReference) {
  for (const Case& s : kGqaCases) {
    const auto qkv = testing::random_floats(size_t(s.T) * s.W(), 37, -2.f, 2.f);
    const auto k = part(qkv, s, 1), v = part(qkv, s, 2);
    for (int past : {0, s.T / 3, s.T - 1}) {
      const int n = s.T - past;
      std::vector<float> out(size_t(n) * s.C);
      cpu::Kernels::attention_cached_forward(out.data(), qkv.data() + size_t(past) * s.W(), s.W(),
                                             k.data(), v.data(), n, past, s.C, s.NH, s.kv());
      EXPECT_LE(test::max_rel_error(out, naive(qkv, s, past)), 1e-5)
          << "T=" << s.T << " NH=" << s.NH << " NKV=" << s.kv() << " past=" << past;
    }
  }
}

}  // namespace
}  // namespace zt
