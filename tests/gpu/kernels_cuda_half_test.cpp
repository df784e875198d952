// The CUDA kernels in bf16 and fp16 against the CPU kernels in the same precision, on the same
// half-representable inputs. Both widen to fp32, compute and round once, so:
//   - element-wise kernels, embedding and layernorm forward: every half output within one ulp of
//     T of the CPU's (the arithmetic is the same kernels/common bodies; only fused multiply-adds
//     and, for layernorm, the reduction order can move the fp32 value across a rounding
//     boundary), so max rel error <= 2^-7 (bf16) / 2^-10 (fp16);
//   - linear: fp32 accumulation in another order, one rounding: the same bounds;
//   - attention: kernels_cuda_attention_test.cpp;
//   - cross-entropy: losses are fp32 from the same widened logits: 1e-5.
#include <gtest/gtest.h>

#include <cstdint>
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
using testing::random_floats;

using test::widen;

template <typename H>
double ulp_tolerance() {
  return std::is_same_v<H, bf16> ? 1.0 / 128 : 1.0 / 1024;
}

template <typename H>
class CudaHalf : public ::testing::Test {};
using HalfTypes = ::testing::Types<bf16, fp16>;
TYPED_TEST_SUITE(CudaHalf, HalfTypes);

TYPED_TEST(CudaHalf, ElementwiseMatchCpu) {
  ZT_REQUIRE_GPU();
  using H = TypeParam;
  const int64_t n = 4096;
  const auto x = test::narrow<H>(random_floats(n, 1)), y = test::narrow<H>(random_floats(n, 2));
  const DropoutParams drop{0.1f, 7, 3};
  DeviceVector<H> dx(x), dy(y), dout(static_cast<size_t>(n));
  std::vector<H> cpu_out(static_cast<size_t>(n));
  cuda::Kernels::gelu_forward(dout.get(), dx.get(), n, 0);
  cpu::Kernels::gelu_forward(cpu_out.data(), x.data(), n);
  EXPECT_LE(rel_err(widen(dout.host()), widen(cpu_out)), ulp_tolerance<H>()) << "gelu";
  cuda::Kernels::dropout_add_forward(dout.get(), dx.get(), dy.get(), n, drop, 0);
  cpu::Kernels::dropout_add_forward(cpu_out.data(), x.data(), y.data(), n, drop);
  EXPECT_LE(rel_err(widen(dout.host()), widen(cpu_out)), ulp_tolerance<H>()) << "dropout_add";
  auto acc = x;
  DeviceVector<H> dacc(x);
  cuda::Kernels::add_broadcast(dacc.get(), dy.get(), 32, 128, 0);
  cpu::Kernels::add_broadcast(acc.data(), y.data(), 32, 128);
  EXPECT_LE(rel_err(widen(dacc.host()), widen(acc)), ulp_tolerance<H>()) << "add_broadcast";
}

TYPED_TEST(CudaHalf, LayernormAndLinearMatchCpu) {
  ZT_REQUIRE_GPU();
  using H = TypeParam;
  const int N = 64, C = 96, out = 80;
  const auto x = test::narrow<H>(random_floats(size_t(N) * C, 3));
  const auto w = test::narrow<H>(random_floats(C, 4)), b = test::narrow<H>(random_floats(C, 5));
  DeviceVector<H> dx(x), dw(w), db(b), dln(size_t(N) * C);
  DeviceVector<float> dmean(N), drstd(N);
  std::vector<H> ln(size_t(N) * C);
  std::vector<float> mean(N), rstd(N);
  cuda::Kernels::layernorm_forward(dln.get(), dmean.get(), drstd.get(), dx.get(), dw.get(),
                                   db.get(), N, C, 0);
  cpu::Kernels::layernorm_forward(ln.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(),
                                  N, C);
  EXPECT_LE(rel_err(widen(dln.host()), widen(ln)), ulp_tolerance<H>()) << "layernorm";
  EXPECT_LE(rel_err(dmean.host(), mean), 1e-5) << "mean";
  const auto W = test::narrow<H>(random_floats(size_t(out) * C, 6, -0.1f, 0.1f));
  const auto bias = test::narrow<H>(random_floats(out, 7, -0.1f, 0.1f));
  DeviceVector<H> dW(W), dbias(bias), dy(size_t(N) * out);
  std::vector<H> y(size_t(N) * out);
  cuda::Kernels::linear_forward(dy.get(), dln.get(), dW.get(), dbias.get(), N, C, out, 0);
  cpu::Kernels::linear_forward(y.data(), ln.data(), W.data(), bias.data(), N, C, out);
  EXPECT_LE(rel_err(widen(dy.host()), widen(y)), ulp_tolerance<H>()) << "linear_forward";
  std::vector<H> gx(size_t(N) * C);
  std::vector<float> gw(size_t(out) * C, 0.0f), gb(out, 0.0f);
  DeviceVector<H> dgx(gx.size());
  DeviceVector<float> dgw(gw), dgb(gb);
  cuda::Kernels::linear_backward(dgx.get(), dgw.get(), dgb.get(), dy.get(), dln.get(), dW.get(), N,
                                 C, out, false, 0);
  cpu::Kernels::linear_backward(gx.data(), gw.data(), gb.data(), y.data(), ln.data(), W.data(), N,
                                C, out, false);
  EXPECT_LE(rel_err(widen(dgx.host()), widen(gx)), ulp_tolerance<H>()) << "linear dx";
  EXPECT_LE(rel_err(dgw.host(), gw), 1e-4) << "linear dw (fp32 accumulation)";
  EXPECT_LE(rel_err(dgb.host(), gb), 1e-5) << "linear db";
}

TYPED_TEST(CudaHalf, CrossEntropyMatchesCpu) {
  ZT_REQUIRE_GPU();
  using H = TypeParam;
  const int B = 2, T = 64, V = 96, v_real = 90;
  const int N = B * T;
  auto logits = test::narrow<H>(random_floats(size_t(N) * V, 10, -3.0f, 3.0f));
  std::vector<int32_t> targets(N);
  for (int i = 0; i < N; ++i) targets[i] = (i * 13) % v_real;
  DeviceVector<H> dlogits(logits);
  DeviceVector<int32_t> dtargets(targets);
  DeviceVector<float> dloss(N);
  std::vector<float> loss(N);
  cuda::Kernels::softmax_cross_entropy(dlogits.get(), dloss.get(), dtargets.get(), N, V, v_real,
                                       0.5f, 0);
  cpu::Kernels::softmax_cross_entropy(logits.data(), loss.data(), targets.data(), N, V, v_real,
                                      0.5f);
  EXPECT_LE(rel_err(dloss.host(), loss), 1e-5) << "cross-entropy loss";
  EXPECT_LE(rel_err(widen(dlogits.host()), widen(logits)), ulp_tolerance<H>()) << "dlogits";
}

}  // namespace
}  // namespace zt
