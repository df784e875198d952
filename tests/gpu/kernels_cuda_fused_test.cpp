// The fused CUDA kernels against the CPU kernels (which equal the unfused ops bitwise,
// tests/unit/kernels_fused_test.cpp) in fp32, bf16 and fp16, and the cuBLASLt plan cache.
// Tolerances (max |cuda - cpu| / max |cpu|), from the roundings each side makes; none of them
// has been measured on a GPU yet (no GPU was available when they were written):
//   - pre = x w^T + b: fp32 accumulation in another order, one rounding: 1e-5 (fp32), one ulp of
//     T (bf16 2^-7, fp16 2^-10), as linear_forward's tests;
//   - y = gelu(pre) through CUBLASLT_EPILOGUE_GELU_AUX_BIAS: cuBLASLt's tanh GeLU on the fp32 sum
//     against kernels/common/gelu.h on the rounded pre (|gelu'| <= 1.13): 1e-4 (fp32), 4 ulps;
//   - dx = (dy w) * gelu'(pre) through CUBLASLT_EPILOGUE_DGELU: one rounding against the CPU's
//     two: 1e-4 (fp32), 4 ulps;
//   - dropout_add_layernorm: the same kernels/common bodies, another reduction order: one ulp
//     (1e-5 in fp32), mean and rstd 1e-5.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/ops.h"
#include "src/core/half.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_cuda_testing.h"
#include "tests/support/half_vectors.h"

namespace zt {
namespace {

using gpu_test::DeviceVector;
using gpu_test::rel_err;
using test::widen;
using testing::random_floats;

template <typename T>
std::vector<T> values(size_t n, uint32_t seed, float scale = 1.0f) {
  const auto f = random_floats(n, seed, -scale, scale);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from_float<T>(f[i]);
  return v;
}

// One rounding of T relative to the largest value (fp32: the GEMM tests' 1e-5).
template <typename T>
double ulp() {
  if constexpr (std::is_same_v<T, bf16>) return 1.0 / 128;
  if constexpr (std::is_same_v<T, fp16>) return 1.0 / 1024;
  return 1e-5;
}
template <typename T>
double epilogue_tol() {
  return std::is_same_v<T, float> ? 1e-4 : 4 * ulp<T>();
}

template <typename T>
class CudaFused : public ::testing::Test {};
using Types = ::testing::Types<float, bf16, fp16>;
TYPED_TEST_SUITE(CudaFused, Types);

TYPED_TEST(CudaFused, LinearGeluForwardMatchesCpu) {
  ZT_REQUIRE_GPU();
  using T = TypeParam;
  // out 96: the GELU_AUX_BIAS epilogue; out 90: not a multiple of 8, the two-op fallback.
  for (const int out : {96, 90}) {
    const int N = 70, in = 64;
    const auto x = values<T>(size_t(N) * in, 1), w = values<T>(size_t(out) * in, 2, 0.3f);
    const auto b = values<T>(out, 3);
    for (const bool bias : {true, false}) {
      DeviceVector<T> dx(x), dw(w), db(b), dy(size_t(N) * out), dpre(size_t(N) * out);
      cuda::Kernels::linear_gelu_forward(dy.get(), dpre.get(), dx.get(), dw.get(),
                                         bias ? db.get() : nullptr, N, in, out, 0);
      std::vector<T> y(size_t(N) * out), pre(y.size());
      cpu::Kernels::linear_gelu_forward(y.data(), pre.data(), x.data(), w.data(),
                                        bias ? b.data() : nullptr, N, in, out);
      EXPECT_LE(rel_err(widen(dpre.host()), widen(pre)), ulp<T>()) << out << " bias " << bias;
      EXPECT_LE(rel_err(widen(dy.host()), widen(y)), epilogue_tol<T>()) << out << " bias " << bias;
    }
  }
}

TYPED_TEST(CudaFused, LinearBackwardGeluMatchesCpu) {
  ZT_REQUIRE_GPU();
  using T = TypeParam;
  for (const int in : {128, 100}) {  // DGELU epilogue / fallback
    const int N = 66, out = 48;
    const auto dy = values<T>(size_t(N) * out, 4), w = values<T>(size_t(out) * in, 5, 0.3f);
    const auto pre = values<T>(size_t(N) * in, 6, 3.0f);
    DeviceVector<T> ddy(dy), dw(w), dpre(pre), ddx(size_t(N) * in);
    cuda::Kernels::linear_backward_gelu(ddx.get(), ddy.get(), dw.get(), dpre.get(), N, in, out, 0);
    std::vector<T> dx(size_t(N) * in);
    cpu::Kernels::linear_backward_gelu(dx.data(), dy.data(), w.data(), pre.data(), N, in, out);
    EXPECT_LE(rel_err(widen(ddx.host()), widen(dx)), epilogue_tol<T>()) << "in " << in;
  }
}

TYPED_TEST(CudaFused, DropoutAddLayernormMatchesCpu) {
  ZT_REQUIRE_GPU();
  using T = TypeParam;
  for (const int C : {768, 77}) {
    const int N = 33;
    const size_t n = size_t(N) * C;
    const auto a = values<T>(n, 7), x = values<T>(n, 8), w = values<T>(C, 9), b = values<T>(C, 10);
    for (const float p : {0.0f, 0.1f}) {
      const DropoutParams drop{p, 99, 12345};
      DeviceVector<T> da(a), dx(x), dw(w), db(b), dres(n), dln(n);
      DeviceVector<float> dmean(N), drstd(N);
      cuda::Kernels::dropout_add_layernorm_forward(dres.get(), dln.get(), dmean.get(), drstd.get(),
                                                   da.get(), dx.get(), dw.get(), db.get(), N, C,
                                                   drop, 0);
      std::vector<T> res(n), ln(n);
      std::vector<float> mean(N), rstd(N);
      cpu::Kernels::dropout_add_layernorm_forward(res.data(), ln.data(), mean.data(), rstd.data(),
                                                  a.data(), x.data(), w.data(), b.data(), N, C,
                                                  drop);
      EXPECT_LE(rel_err(widen(dres.host()), widen(res)), ulp<T>()) << "res C " << C << " p " << p;
      EXPECT_LE(rel_err(widen(dln.host()), widen(ln)), ulp<T>()) << "ln C " << C << " p " << p;
      EXPECT_LE(rel_err(dmean.host(), mean), 1e-5) << "mean C " << C << " p " << p;
      EXPECT_LE(rel_err(drstd.host(), rstd), 1e-5) << "rstd C " << C << " p " << p;
    }
  }
}

// The same problem reuses its plan; a new shape adds one; the cache stays bounded.
TEST(CudaLtPlanCache, ReusedPerShapeAndBounded) {
  ZT_REQUIRE_GPU();
  const int N = 16, in = 32, out = 24;
  const auto x = random_floats(size_t(N) * in, 1), w = random_floats(size_t(out) * in, 2);
  DeviceVector<float> dx(x), dw(w), dy(size_t(N) * out);
  const float* no_bias = nullptr;
  cuda::Kernels::linear_forward(dy.get(), dx.get(), dw.get(), no_bias, N, in, out, 0);
  const size_t after_first = cuda::detail::lt_plan_count();
  cuda::Kernels::linear_forward(dy.get(), dx.get(), dw.get(), no_bias, N, in, out, 0);
  EXPECT_EQ(cuda::detail::lt_plan_count(), after_first);
  cuda::Kernels::linear_forward(dy.get(), dx.get(), dw.get(), no_bias, N - 1, in, out, 0);
  EXPECT_EQ(cuda::detail::lt_plan_count(),
            std::min(after_first + 1, cuda::detail::kLtPlanCacheEntries));
  // 16 x 20 = 320 more problems than fit.
  for (int m = 1; m <= N; ++m)
    for (int k = 1; k <= 20; ++k)
      cuda::gemm(false, true, m, out, k, 1.0f, dx.get(), in, dw.get(), in, 0.0f, dy.get(), out, 0);
  EXPECT_LE(cuda::detail::lt_plan_count(), cuda::detail::kLtPlanCacheEntries);
  ZT_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace zt
