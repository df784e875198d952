// The CUDA element-wise, normalisation, embedding, loss, optimizer and reduction kernels against
// the CPU backend on random inputs. Tolerances (max |gpu - cpu| / max |cpu|):
//   element-wise math (GeLU, dropout-add, AdamW): 1e-6 — the same kernels/common bodies; only
//   the compilers' fused multiply-add choices differ (a few ulp);
//   layernorm, cross-entropy: 1e-5 (row sums in a different order);
//   sum_squares: 1e-12 (double accumulation in a different order).
// Bit-exact: casts and accumulate (integer rounding code), dropout masks, add/scale (one
// rounding each), embedding forward and backward (the same additions in the same order).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
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

TEST(CudaElementwise, GeluForwardBackward) {
  ZT_REQUIRE_GPU();
  const size_t n = 100003;
  const auto x = random_floats(n, 1, -8.0f, 8.0f), g = random_floats(n, 2);
  std::vector<float> y(n), dx(n);
  cpu::Kernels::gelu_forward(y.data(), x.data(), int64_t(n));
  cpu::Kernels::gelu_backward(dx.data(), x.data(), g.data(), int64_t(n));
  DeviceVector<float> dX(x), dG(g), dY(n), dDX(n);
  cuda::Kernels::gelu_forward(dY.get(), dX.get(), int64_t(n), 0);
  cuda::Kernels::gelu_backward(dDX.get(), dX.get(), dG.get(), int64_t(n), 0);
  EXPECT_LE(rel_err(dY.host(), y), 1e-6);
  EXPECT_LE(rel_err(dDX.host(), dx), 1e-6);
}

TEST(CudaElementwise, BiasGelu) {
  ZT_REQUIRE_GPU();
  const int N = 77, C = 130;
  const auto x = random_floats(size_t(N) * C, 3, -4.0f, 4.0f), b = random_floats(C, 4);
  std::vector<float> pre(x.size()), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) pre[i] = x[i] + b[i % C];
  cpu::Kernels::gelu_forward(y.data(), pre.data(), int64_t(y.size()));
  DeviceVector<float> dX(x), dB(b), dY(x.size());
  cuda::bias_gelu_forward(dY.get(), dX.get(), dB.get(), N, C, 0);
  EXPECT_LE(rel_err(dY.host(), y), 1e-6);
}

TEST(CudaElementwise, DropoutMasksAreBitIdenticalToCpu) {
  ZT_REQUIRE_GPU();
  const size_t n = 65537;
  for (const float p : {0.0f, 0.1f, 0.5f}) {
    const DropoutParams drop{p, 777, 12345};
    // dout = 1: dx is exactly the mask's multiplier (0 or 1/(1-p)), no rounding involved.
    const std::vector<float> ones(n, 1.0f);
    std::vector<float> mask(n);
    cpu::Kernels::dropout_backward(mask.data(), ones.data(), int64_t(n), drop);
    DeviceVector<float> dOnes(ones), dMask(n);
    cuda::Kernels::dropout_backward(dMask.get(), dOnes.get(), int64_t(n), drop, 0);
    EXPECT_TRUE(same_bits(dMask.host(), mask)) << "p " << p;

    const auto a = random_floats(n, 5), x = random_floats(n, 6);
    std::vector<float> out(n);
    cpu::Kernels::dropout_add_forward(out.data(), a.data(), x.data(), int64_t(n), drop);
    DeviceVector<float> dA(a), dX(x), dOut(n);
    cuda::Kernels::dropout_add_forward(dOut.get(), dA.get(), dX.get(), int64_t(n), drop, 0);
    EXPECT_LE(rel_err(dOut.host(), out), 1e-6) << "p " << p;
  }
}

TEST(CudaElementwise, AddAndScaleAreBitExact) {
  ZT_REQUIRE_GPU();
  const size_t n = 4099;
  auto y = random_floats(n, 7);
  const auto x = random_floats(n, 8);
  DeviceVector<float> dY(y), dX(x);
  cuda::Kernels::add_inplace(dY.get(), dX.get(), int64_t(n), 0);
  cuda::Kernels::scale_inplace(dY.get(), 0.37f, int64_t(n), 0);
  cpu::Kernels::add_inplace(y.data(), x.data(), int64_t(n));
  cpu::Kernels::scale_inplace(y.data(), 0.37f, int64_t(n));
  EXPECT_TRUE(same_bits(dY.host(), y));
}

// Every float class: random bit patterns (NaNs, infinities, subnormals, all exponents) plus
// values that sit exactly on bf16 and fp16 rounding ties.
std::vector<float> cast_inputs() {
  std::mt19937 g(9);
  std::vector<float> v;
  for (int i = 0; i < 200000; ++i) v.push_back(bits_float(static_cast<uint32_t>(g())));
  for (uint32_t m = 0; m < 4096; ++m) {
    v.push_back(bits_float(0x3f800000u | (m << 12) | 0x8000u));  // bf16 ties
    v.push_back(bits_float(0x3f800000u | (m << 11) | 0x1000u));  // fp16 ties
    v.push_back(bits_float(0x33000000u + m * 0x1000u));          // fp16 subnormal range
  }
  v.push_back(std::numeric_limits<float>::infinity());
  v.push_back(-std::numeric_limits<float>::infinity());
  v.push_back(65520.0f);  // rounds to fp16 inf
  v.push_back(-0.0f);
  return v;
}

template <typename H>
void check_casts() {
  const auto x = cast_inputs();
  const int64_t n = int64_t(x.size());
  std::vector<H> h(x.size());
  cpu::Kernels::cast(h.data(), x.data(), n);
  DeviceVector<float> dX(x);
  DeviceVector<H> dH(x.size());
  cuda::Kernels::cast(dH.get(), dX.get(), n, 0);
  EXPECT_TRUE(same_bits(dH.host(), h)) << "float -> half";

  std::vector<float> back(x.size());
  cpu::Kernels::cast(back.data(), h.data(), n);
  DeviceVector<float> dBack(x.size());
  cuda::Kernels::cast(dBack.get(), dH.get(), n, 0);
  EXPECT_TRUE(same_bits(dBack.host(), back)) << "half -> float";

  // accumulate: bit-exact except that a NaN's payload after float arithmetic is the hardware's
  // (x86 keeps the operand's, the GPU returns the canonical NaN), so NaNs only need to be NaN.
  const auto s = random_floats(x.size(), 10, -4.0f, 4.0f);
  cpu::Kernels::accumulate(h.data(), s.data(), n);
  DeviceVector<float> dS(s);
  cuda::Kernels::accumulate(dH.get(), dS.get(), n, 0);
  const auto got = dH.host();
  size_t bad = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    const bool nan = std::isnan(to_float(h[i]));
    if (nan ? !std::isnan(to_float(got[i])) : got[i].bits != h[i].bits) ++bad;
  }
  EXPECT_EQ(bad, 0u) << "accumulate";
}

TEST(CudaCast, Bf16AndFp16BitExact) {
  ZT_REQUIRE_GPU();
  check_casts<bf16>();
  check_casts<fp16>();
}

template <typename T>
void check_reductions(size_t n) {
  const auto f = random_floats(n, 11, -3.0f, 3.0f);
  std::vector<T> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = from_float<T>(f[i]);
  DeviceVector<T> dX(x);
  const double want = cpu::Kernels::sum_squares(x.data(), int64_t(n));
  const double got = cuda::Kernels::sum_squares(dX.get(), int64_t(n), 0);
  EXPECT_LE(std::fabs(got - want) / want, 1e-12) << "n " << n;
  EXPECT_EQ(cuda::Kernels::sum_squares(dX.get(), int64_t(n), 0), got) << "run-to-run";
  EXPECT_FALSE(cuda::Kernels::has_inf_or_nan(dX.get(), int64_t(n), 0));
  for (const float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    for (const size_t at : {size_t{0}, n / 2, n - 1}) {
      auto y = x;
      y[at] = from_float<T>(bad);
      DeviceVector<T> dY(y);
      EXPECT_TRUE(cuda::Kernels::has_inf_or_nan(dY.get(), int64_t(n), 0)) << "at " << at;
      EXPECT_EQ(cpu::Kernels::has_inf_or_nan(y.data(), int64_t(n)), true);
    }
  }
}

TEST(CudaReduce, SumSquaresAndHasInfOrNan) {
  ZT_REQUIRE_GPU();
  for (const size_t n : {size_t{1}, size_t{1000}, size_t{(1 << 20) + 3}}) {
    check_reductions<float>(n);
    check_reductions<bf16>(n);
    check_reductions<fp16>(n);
  }
  EXPECT_EQ(cuda::Kernels::sum_squares(static_cast<const float*>(nullptr), 0, 0), 0.0);
}

TEST(CudaLayerNorm, ForwardBackwardMatchCpuAndAreDeterministic) {
  ZT_REQUIRE_GPU();
  // N = 600 spans three 256-row chunks of the dw/db column sums.
  for (const int C : {48, 769}) {
    const int N = C == 48 ? 600 : 150;
    const auto x = random_floats(size_t(N) * C, 12, -3.0f, 3.0f);
    const auto w = random_floats(C, 13), b = random_floats(C, 14);
    const auto g = random_floats(size_t(N) * C, 15);
    const auto dx0 = random_floats(size_t(N) * C, 16), dw0 = random_floats(C, 17);
    const auto db0 = random_floats(C, 18);
    std::vector<float> out(x.size()), mean(N), rstd(N);
    cpu::Kernels::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                    b.data(), N, C);
    auto dx = dx0, dw = dw0, db = db0;
    cpu::Kernels::layernorm_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(),
                                     mean.data(), rstd.data(), N, C);
    DeviceVector<float> dX(x), dW(w), dB(b), dG(g), dOut(x.size()), dMean(N), dRstd(N);
    cuda::Kernels::layernorm_forward(dOut.get(), dMean.get(), dRstd.get(), dX.get(), dW.get(),
                                     dB.get(), N, C, 0);
    EXPECT_LE(rel_err(dOut.host(), out), 1e-5) << "C " << C;
    EXPECT_LE(rel_err(dMean.host(), mean), 1e-5);
    EXPECT_LE(rel_err(dRstd.host(), rstd), 1e-5);
    std::vector<float> first[3];
    for (int run = 0; run < 2; ++run) {
      DeviceVector<float> ddx(dx0), ddw(dw0), ddb(db0);
      cuda::Kernels::layernorm_backward(ddx.get(), ddw.get(), ddb.get(), dG.get(), dX.get(),
                                        dW.get(), dMean.get(), dRstd.get(), N, C, 0);
      const std::vector<float> got[3] = {ddx.host(), ddw.host(), ddb.host()};
      EXPECT_LE(rel_err(got[0], dx), 1e-5) << "dx";
      EXPECT_LE(rel_err(got[1], dw), 1e-5) << "dw";
      EXPECT_LE(rel_err(got[2], db), 1e-5) << "db";
      if (run == 0)
        for (int k = 0; k < 3; ++k) first[k] = got[k];
      else
        for (int k = 0; k < 3; ++k) EXPECT_TRUE(same_bits(got[k], first[k])) << "output " << k;
    }
  }
}

TEST(CudaEmbedding, ForwardBackwardBitIdenticalToCpu) {
  ZT_REQUIRE_GPU();
  const int B = 3, T = 41, C = 70, V = 50;
  std::mt19937 gen(19);
  std::uniform_int_distribution<int32_t> tok(0, V - 1);
  std::vector<int32_t> tokens(size_t(B) * T);
  for (auto& t : tokens) t = tok(gen) % 9;  // few distinct tokens: long segments
  for (size_t i = 0; i < tokens.size(); i += 5) tokens[i] = tok(gen);
  const auto wte = random_floats(size_t(V) * C, 20), wpe = random_floats(size_t(T) * C, 21);
  const auto dout = random_floats(size_t(B) * T * C, 22);
  DeviceVector<int32_t> dT(tokens);
  DeviceVector<float> dWte(wte), dWpe(wpe), dDout(dout), dOut(dout.size());
  // A vocab shard [v_begin, v_begin + v_local), with and without the position table.
  for (const int v_begin : {0, 4})
    for (const bool pos : {true, false}) {
      const int v_local = v_begin == 0 ? V : 17;
      std::vector<float> out(dout.size());
      cpu::Kernels::embedding_forward(out.data(), tokens.data(), wte.data(),
                                      pos ? wpe.data() : nullptr, B, T, C, v_begin, v_local);
      cuda::Kernels::embedding_forward(dOut.get(), dT.get(), dWte.get(), pos ? dWpe.get() : nullptr,
                                       B, T, C, v_begin, v_local, 0);
      EXPECT_TRUE(same_bits(dOut.host(), out)) << "forward v_begin " << v_begin << " pos " << pos;

      auto gte = random_floats(size_t(v_local) * C, 23), gpe = random_floats(size_t(T) * C, 24);
      DeviceVector<float> dGte(gte), dGpe(gpe);
      cpu::Kernels::embedding_backward(gte.data(), pos ? gpe.data() : nullptr, dout.data(),
                                       tokens.data(), B, T, C, v_begin, v_local);
      for (int run = 0; run < 2; ++run) {
        // Second run from the first run's result: the CPU's accumulation applied twice.
        cuda::Kernels::embedding_backward(dGte.get(), pos ? dGpe.get() : nullptr, dDout.get(),
                                          dT.get(), B, T, C, v_begin, v_local, 0);
        EXPECT_TRUE(same_bits(dGte.host(), gte)) << "dwte run " << run;
        if (pos) {
          EXPECT_TRUE(same_bits(dGpe.host(), gpe)) << "dwpe run " << run;
        }
        if (run == 0)
          cpu::Kernels::embedding_backward(gte.data(), pos ? gpe.data() : nullptr, dout.data(),
                                           tokens.data(), B, T, C, v_begin, v_local);
      }
    }
}

TEST(CudaCrossEntropy, MatchesCpuWithPadding) {
  ZT_REQUIRE_GPU();
  const int N = 37, V = 1030, v_real = 1000;
  auto logits = random_floats(size_t(N) * V, 25, -6.0f, 6.0f);
  std::vector<int32_t> targets(N);
  for (int n = 0; n < N; ++n) targets[n] = (n * 97) % v_real;
  DeviceVector<float> dL(logits), dLoss(N);
  DeviceVector<int32_t> dT(targets);
  std::vector<float> losses(N);
  cpu::Kernels::softmax_cross_entropy(logits.data(), losses.data(), targets.data(), N, V, v_real,
                                      0.25f);
  cuda::Kernels::softmax_cross_entropy(dL.get(), dLoss.get(), dT.get(), N, V, v_real, 0.25f, 0);
  EXPECT_LE(rel_err(dLoss.host(), losses), 1e-5);
  const auto dl = dL.host();
  EXPECT_LE(rel_err(dl, logits), 1e-5);
  for (int n = 0; n < N; ++n)
    for (int j = v_real; j < V; ++j) ASSERT_EQ(dl[size_t(n) * V + j], 0.0f) << "padding";
}

TEST(CudaAdamW, SingleTensorMatchesCpu) {
  ZT_REQUIRE_GPU();
  const size_t n = 50001;
  AdamWParams ap;
  ap.lr = 1e-3f;
  ap.weight_decay = 0.1f;
  ap.grad_scale = 0.5f;
  auto p = random_floats(n, 26), m = random_floats(n, 27, -0.1f, 0.1f);
  auto v = random_floats(n, 28, 0.0f, 0.01f);
  const auto g = random_floats(n, 29);
  DeviceVector<float> dP(p), dM(m), dV(v), dG(g);
  for (int64_t step = 1; step <= 3; ++step) {
    ap.step = step;
    cpu::Kernels::adamw(p.data(), m.data(), v.data(), g.data(), int64_t(n), ap);
    cuda::Kernels::adamw(dP.get(), dM.get(), dV.get(), dG.get(), int64_t(n), ap, 0);
  }
  EXPECT_LE(rel_err(dP.host(), p), 1e-6);
  EXPECT_LE(rel_err(dM.host(), m), 1e-6);
  EXPECT_LE(rel_err(dV.host(), v), 1e-6);
}

}  // namespace
}  // namespace zt
