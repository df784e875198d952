// The CUDA attention_cached_forward against the CPU one (itself checked against the full
// attention in tests/unit/kernels_attention_cached_test.cpp) on the same inputs: the same math
// in another summation order, so fp32 to 1e-5 relative and bf16 / fp16 to one rounding of T.
// Shapes: one new row after a long prefix (decoding), a prompt after a prefix, several heads,
// head sizes up to 128 and not a multiple of 16, a prefix past the default 48 KiB of shared
// memory per block (13000 keys of fp32 scores); grouped-query attention (1 key/value head, and
// groups of 2 and 3 query heads).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "src/core/half.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_cuda_testing.h"
#include "tests/support/half_vectors.h"

namespace zt {
namespace {

using gpu_test::DeviceVector;
using gpu_test::rel_err;

struct Case {
  int n, past, C, NH;
  int NKV = 0;  // 0: NH
  int kv() const { return NKV > 0 ? NKV : NH; }
  int Ckv() const { return kv() * (C / NH); }
};

template <typename H>
void check(const Case& s, double tol) {
  const int keys = s.past + s.n;
  const int ldq = s.C + 2 * s.Ckv();
  const auto q = test::narrow<H>(testing::random_floats(size_t(s.n) * ldq, 41, -2.f, 2.f));
  const auto k = test::narrow<H>(testing::random_floats(size_t(keys) * s.Ckv(), 42, -2.f, 2.f));
  const auto v = test::narrow<H>(testing::random_floats(size_t(keys) * s.Ckv(), 43));
  std::vector<H> want(size_t(s.n) * s.C);
  cpu::Kernels::attention_cached_forward(want.data(), q.data(), ldq, k.data(), v.data(), s.n,
                                         s.past, s.C, s.NH, s.kv());
  DeviceVector<H> dq(q), dk(k), dv(v), dout(want.size());
  cuda::Kernels::attention_cached_forward(dout.get(), dq.get(), ldq, dk.get(), dv.get(), s.n,
                                          s.past, s.C, s.NH, s.kv(), 0);
  EXPECT_LE(rel_err(test::widen(dout.host()), test::widen(want)), tol)
      << "n=" << s.n << " past=" << s.past << " C=" << s.C << " NH=" << s.NH << " NKV=" << s.kv();
}

const Case kCases[] = {{1, 0, 8, 1},      {1, 200, 64, 4},    {7, 50, 40, 2},    {64, 0, 256, 2},
                       {1, 13000, 64, 1}, {1, 200, 64, 4, 1}, {7, 50, 48, 6, 2}, {9, 3, 128, 4, 2}};

TEST(CudaAttentionCached, Fp32MatchesTheCpu) {
  ZT_REQUIRE_GPU();
  for (const Case& s : kCases) check<float>(s, 1e-5);
}

TEST(CudaAttentionCached, HalfMatchesTheCpu) {
  ZT_REQUIRE_GPU();
  for (const Case& s : kCases) {
    check<bf16>(s, 1e-2);
    check<fp16>(s, 2e-3);
  }
}

}  // namespace
}  // namespace zt
