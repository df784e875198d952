// The CUDA GEMM and linear kernels against the CPU backend on random inputs (attention:
// kernels_cuda_attention_test.cpp).
// Tolerances are max |gpu - cpu| / max |cpu| (tests/support/max_rel_error.h):
//   fp32 GEMM and linear: 1e-5 (both exact fp32, only the summation order differs);
//   gemm_mixed: 1e-4 with an fp32 result (products of 16-bit operands are exact in fp32; tensor
//   cores accumulate in fp32 in their own order), 8e-3 / 1e-3 with a bf16 / fp16 result (one
//   rounding of the output: half an ulp is 2^-9 / 2^-12 of the value, doubled for safety).
// Deterministic kernels run twice from the same state must give identical bits.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "src/core/half.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_cuda_testing.h"

namespace zt {
namespace {

using gpu_test::DeviceVector;
using gpu_test::rel_err;
using testing::random_floats;
using testing::same_bits;

TEST(CudaGemm, Fp32AllTransposesMatchCpu) {
  ZT_REQUIRE_GPU();
  const int M = 37, N = 53, K = 29;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      // Padded leading dimensions, so the kernels must honour lda/ldb/ldc.
      const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 7;
      const auto A = random_floats(size_t((ta ? K : M)) * lda, 1);
      const auto B = random_floats(size_t((tb ? N : K)) * ldb, 2);
      auto C = random_floats(size_t(M) * ldc, 3);
      DeviceVector<float> dA(A), dB(B), dC(C);
      cuda::gemm(ta, tb, M, N, K, 0.7f, dA.get(), lda, dB.get(), ldb, 0.3f, dC.get(), ldc, 0);
      cpu::gemm(ta, tb, M, N, K, 0.7f, A.data(), lda, B.data(), ldb, 0.3f, C.data(), ldc);
      EXPECT_LE(rel_err(dC.host(), C), 1e-5) << "trans " << ta << tb;
    }
}

TEST(CudaGemm, ZeroKScalesC) {
  ZT_REQUIRE_GPU();
  auto C = random_floats(6 * 4, 4);
  DeviceVector<float> dC(C);
  cuda::gemm(false, false, 6, 4, 0, 1.0f, dC.get(), 4, dC.get(), 4, 0.5f, dC.get(), 4, 0);
  for (auto& c : C) c *= 0.5f;
  EXPECT_TRUE(same_bits(dC.host(), C));
}

template <typename H>
void check_gemm_mixed(DType ab, DType c_type, double tol) {
  const int M = 64, N = 48, K = 96;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      const int lda = ta ? M : K, ldb = tb ? K : N;
      const auto Af = random_floats(size_t(M) * K, 5), Bf = random_floats(size_t(K) * N, 6);
      std::vector<H> A(Af.size()), B(Bf.size());
      std::vector<float> Ar(Af.size()), Br(Bf.size());
      for (size_t i = 0; i < Af.size(); ++i) Ar[i] = to_float(A[i] = from_float<H>(Af[i]));
      for (size_t i = 0; i < Bf.size(); ++i) Br[i] = to_float(B[i] = from_float<H>(Bf[i]));
      std::vector<float> ref(size_t(M) * N, 0.0f);
      cpu::gemm(ta, tb, M, N, K, 1.0f, Ar.data(), lda, Br.data(), ldb, 0.0f, ref.data(), N);
      DeviceVector<H> dA(A), dB(B);
      std::vector<float> got(ref.size());
      if (c_type == DType::F32) {
        DeviceVector<float> dC(ref.size());
        cuda::gemm_mixed(ta, tb, M, N, K, 1.0f, dA.get(), lda, dB.get(), ldb, 0.0f, dC.get(), N, ab,
                         c_type, 0);
        got = dC.host();
      } else {
        DeviceVector<H> dC(ref.size());
        cuda::gemm_mixed(ta, tb, M, N, K, 1.0f, dA.get(), lda, dB.get(), ldb, 0.0f, dC.get(), N, ab,
                         c_type, 0);
        const auto h = dC.host();
        for (size_t i = 0; i < h.size(); ++i) got[i] = to_float(h[i]);
      }
      EXPECT_LE(rel_err(got, ref), tol) << dtype_name(ab) << " -> " << dtype_name(c_type);
    }
}

TEST(CudaGemm, MixedBf16AndFp16MatchCpuOnRoundedOperands) {
  ZT_REQUIRE_GPU();
  check_gemm_mixed<bf16>(DType::BF16, DType::F32, 1e-4);
  check_gemm_mixed<bf16>(DType::BF16, DType::BF16, 8e-3);
  check_gemm_mixed<fp16>(DType::F16, DType::F32, 1e-4);
  check_gemm_mixed<fp16>(DType::F16, DType::F16, 1e-3);
}

TEST(CudaLinear, ForwardWithAndWithoutBias) {
  ZT_REQUIRE_GPU();
  const int N = 70, in = 48, out = 40;
  const auto x = random_floats(size_t(N) * in, 7), w = random_floats(size_t(out) * in, 8);
  const auto b = random_floats(out, 9);
  DeviceVector<float> dx(x), dw(w), db(b), dy(size_t(N) * out);
  std::vector<float> y(size_t(N) * out);
  for (const bool bias : {true, false}) {
    cuda::Kernels::linear_forward(dy.get(), dx.get(), dw.get(), bias ? db.get() : nullptr, N, in,
                                  out, 0);
    cpu::Kernels::linear_forward(y.data(), x.data(), w.data(), bias ? b.data() : nullptr, N, in,
                                 out);
    EXPECT_LE(rel_err(dy.host(), y), 1e-5) << "bias " << bias;
  }
}

TEST(CudaLinear, BackwardMatchesCpuAndIsDeterministic) {
  ZT_REQUIRE_GPU();
  const int N = 300, in = 40, out = 72;  // N > the column-sum kernel's row lanes
  const auto x = random_floats(size_t(N) * in, 13), w = random_floats(size_t(out) * in, 14);
  const auto g = random_floats(size_t(N) * out, 15);
  const auto dx0 = random_floats(size_t(N) * in, 16), dw0 = random_floats(size_t(out) * in, 17);
  const auto db0 = random_floats(out, 18);
  for (const bool acc : {false, true}) {
    auto dx = dx0, dw = dw0, db = db0;
    cpu::Kernels::linear_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), N,
                                  in, out, acc);
    std::vector<float> first[3];
    for (int run = 0; run < 2; ++run) {
      DeviceVector<float> ddx(dx0), ddw(dw0), ddb(db0), dg(g), dX(x), dW(w);
      cuda::Kernels::linear_backward(ddx.get(), ddw.get(), ddb.get(), dg.get(), dX.get(), dW.get(),
                                     N, in, out, acc, 0);
      const std::vector<float> got[3] = {ddx.host(), ddw.host(), ddb.host()};
      EXPECT_LE(rel_err(got[0], dx), 1e-5) << "dx, accumulate " << acc;
      EXPECT_LE(rel_err(got[1], dw), 1e-5) << "dw";
      EXPECT_LE(rel_err(got[2], db), 1e-5) << "db";
      if (run == 0)
        for (int k = 0; k < 3; ++k) first[k] = got[k];
      else
        for (int k = 0; k < 3; ++k) EXPECT_TRUE(same_bits(got[k], first[k])) << "output " << k;
    }
  }
}

// More rows than one grid dimension holds chunks for: 65,537 chunks of 256 rows (grid y alone
// takes 65,535), so the column sum runs over a folded grid. The values make every partial sum a
// small integer, exact in any order: dy cycles through -1, 0, 1, x is 1 and w 0.5, so db and dw
// are exactly the CPU's and dx is dy / 2.
TEST(CudaLinear, BackwardOverMoreRowsThanOneGridDimension) {
  ZT_REQUIRE_GPU();
  const int N = 65537 * 256 - 5, in = 1, out = 1;
  std::vector<float> g(static_cast<size_t>(N)), x(static_cast<size_t>(N), 1.0f), w{0.5f};
  for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(i % 3) - 1.0f;
  std::vector<float> dx(static_cast<size_t>(N)), dw{3.0f}, db{-2.0f};
  const std::vector<float> dw0 = dw, db0 = db;
  cpu::Kernels::linear_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), N,
                                in, out, false);
  DeviceVector<float> ddx(dx.size()), ddw(dw0), ddb(db0), dg(g), dX(x), dW(w);
  cuda::Kernels::linear_backward(ddx.get(), ddw.get(), ddb.get(), dg.get(), dX.get(), dW.get(), N,
                                 in, out, false, 0);
  EXPECT_EQ(ddb.host(), db);
  EXPECT_EQ(ddw.host(), dw);
  EXPECT_TRUE(same_bits(ddx.host(), dx));
}

}  // namespace
}  // namespace zt
