// The CUDA RMSNorm, SwiGLU and rotary-embedding kernels against the CPU ones (which
// tests/unit/kernels_llama_test.cpp checks against naive references), on the same inputs
// representable in the working precision: max |gpu - cpu| / max |cpu| within fp32 summation
// order (fp32) or one rounding of T (half). Row lengths off the block size, sequence lengths off
// any tile, one and several key/value heads.
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
using test::narrow;
using test::widen;
using testing::random_floats;

template <typename H>
constexpr double kTol = std::is_same_v<H, float> ? 1e-5 : (std::is_same_v<H, bf16> ? 1e-2 : 2e-3);

template <typename H>
void check_rmsnorm(int N, int C) {
  const auto x = narrow<H>(random_floats(size_t(N) * C, 1, -2, 2));
  const auto w = narrow<H>(random_floats(size_t(C), 2, 0.5f, 1.5f));
  const auto d = narrow<H>(random_floats(size_t(N) * C, 3));
  std::vector<H> out(x.size()), dx(x.size(), from_float<H>(0.5f));
  std::vector<float> rstd(static_cast<size_t>(N)), dw(static_cast<size_t>(C), 0.0f);
  cpu::Kernels::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
  cpu::Kernels::rmsnorm_backward(dx.data(), dw.data(), d.data(), x.data(), w.data(), rstd.data(), N,
                                 C);
  DeviceVector<H> gx(x), gw(w), gd(d), gout(x.size()),
      gdx(std::vector<H>(x.size(), from_float<H>(0.5f)));
  DeviceVector<float> grstd(static_cast<size_t>(N));
  DeviceVector<float> gdw(std::vector<float>(static_cast<size_t>(C), 0.0f));
  cuda::Kernels::rmsnorm_forward(gout.get(), grstd.get(), gx.get(), gw.get(), N, C, 1e-5f, 0);
  cuda::Kernels::rmsnorm_backward(gdx.get(), gdw.get(), gd.get(), gx.get(), gw.get(), grstd.get(),
                                  N, C, 0);
  EXPECT_LE(rel_err(widen(gout.host()), widen(out)), kTol<H>) << N << "x" << C;
  EXPECT_LE(rel_err(grstd.host(), rstd), 1e-5) << N << "x" << C;
  EXPECT_LE(rel_err(widen(gdx.host()), widen(dx)), kTol<H>) << N << "x" << C;
  EXPECT_LE(rel_err(gdw.host(), dw), 1e-4) << N << "x" << C;
}

TEST(CudaLlama, RmsNormMatchesCpu) {
  ZT_REQUIRE_GPU();
  for (const auto& [N, C] : {std::pair{1, 1}, std::pair{7, 300}, std::pair{600, 4096}}) {
    check_rmsnorm<float>(N, C);
    check_rmsnorm<bf16>(N, C);
    check_rmsnorm<fp16>(N, C);
  }
}

template <typename H>
void check_swiglu(int N, int F) {
  const auto pre = narrow<H>(random_floats(size_t(N) * 2 * F, 4, -6, 6));
  const auto dy = narrow<H>(random_floats(size_t(N) * F, 5));
  std::vector<H> y(size_t(N) * F), dpre(pre.size());
  cpu::Kernels::swiglu_forward(y.data(), pre.data(), N, F);
  cpu::Kernels::swiglu_backward(dpre.data(), dy.data(), pre.data(), N, F);
  DeviceVector<H> gpre(pre), gdy(dy), gy(y.size()), gd(pre.size());
  cuda::Kernels::swiglu_forward(gy.get(), gpre.get(), N, F, 0);
  cuda::Kernels::swiglu_backward(gd.get(), gdy.get(), gpre.get(), N, F, 0);
  EXPECT_LE(rel_err(widen(gy.host()), widen(y)), kTol<H>);
  EXPECT_LE(rel_err(widen(gd.host()), widen(dpre)), kTol<H>);
}

TEST(CudaLlama, SwiGluMatchesCpu) {
  ZT_REQUIRE_GPU();
  for (const auto& [N, F] : {std::pair{1, 1}, std::pair{33, 700}}) {
    check_swiglu<float>(N, F);
    check_swiglu<bf16>(N, F);
    check_swiglu<fp16>(N, F);
  }
}

template <typename H>
void check_rope(int B, int T, int NH, int G, int hd) {
  const size_t n = size_t(B) * T * (NH + 2 * G) * hd;
  const auto x = narrow<H>(random_floats(n, 6));
  auto f = x, b = x;
  cpu::Kernels::rope_forward(f.data(), B, T, NH, G, hd, rope_freqs(hd, 500000.0));
  cpu::Kernels::rope_backward(b.data(), B, T, NH, G, hd, rope_freqs(hd, 500000.0));
  DeviceVector<H> gf(x), gb(x);
  cuda::Kernels::rope_forward(gf.get(), B, T, NH, G, hd, rope_freqs(hd, 500000.0), 0);
  cuda::Kernels::rope_backward(gb.get(), B, T, NH, G, hd, rope_freqs(hd, 500000.0), 0);
  // cosf/sinf of the same fp32 angle may differ by an ulp between the libraries.
  EXPECT_LE(rel_err(widen(gf.host()), widen(f)), std::max(kTol<H>, 1e-6)) << T << " " << G;
  EXPECT_LE(rel_err(widen(gb.host()), widen(b)), std::max(kTol<H>, 1e-6)) << T << " " << G;
}

// rope_forward_at (generation's new rows at an offset) against the CPU one.
template <typename H>
void check_rope_at(int n, int pos0, int NH, int G, int hd) {
  const auto x = narrow<H>(random_floats(size_t(n) * (NH + 2 * G) * hd, 7));
  auto f = x;
  cpu::Kernels::rope_forward_at(f.data(), n, pos0, NH, G, hd, rope_freqs(hd, 500000.0));
  DeviceVector<H> gf(x);
  cuda::Kernels::rope_forward_at(gf.get(), n, pos0, NH, G, hd, rope_freqs(hd, 500000.0), 0);
  EXPECT_LE(rel_err(widen(gf.host()), widen(f)), std::max(kTol<H>, 1e-6)) << n << " " << pos0;
}

TEST(CudaLlama, RopeMatchesCpu) {
  ZT_REQUIRE_GPU();
  for (const int G : {1, 2, 8}) {
    check_rope<float>(2, 133, 8, G, 64);
    check_rope<bf16>(1, 70, 8, G, 128);
    check_rope<fp16>(1, 65, 8, G, 16);
  }
}

TEST(CudaLlama, RopeAtAnOffsetMatchesCpu) {
  ZT_REQUIRE_GPU();
  for (const int G : {1, 2, 8}) {
    check_rope_at<float>(1, 300, 8, G, 64);
    check_rope_at<bf16>(5, 17, 8, G, 128);
    check_rope_at<fp16>(1, 0, 8, G, 16);
  }
}

}  // namespace
}  // namespace zt
