// The CUDA vocab-parallel cross-entropy passes and multi-tensor optimizer kernels against the CPU
// backend. Tolerances (max |gpu - cpu| / max |cpu|): the cross-entropy passes 1e-5 in fp32 (row
// sums in another order; the max is exact), a half gradient one rounding (1e-2 bf16, 1e-3 fp16);
// sum_squares_multi 1e-12 (double, another order within a block, the same block cut and the
// same order across blocks, segments and launches); adamw_multi 1e-6 (the same adamw_update body;
// only fused multiply-adds differ).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "src/core/half.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_cuda_testing.h"
#include "tests/support/half_vectors.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using gpu_test::DeviceVector;
using gpu_test::rel_err;
using test::widen;
using testing::random_floats;
using testing::same_bits;

// One shard [v_begin, v_begin + V) of a vocabulary of v_real real columns, pass by pass: each
// pass on the GPU gets the CPU's input, so each is compared on its own.
template <typename T>
void check_vocab_ce(int N, int V, int v_begin, int v_real, double tol) {
  const auto x = test::narrow<T>(random_floats(size_t(N) * V, 3, -6, 6));
  std::vector<int32_t> tg(N);
  for (int n = 0; n < N; ++n) tg[n] = (n * 31 + 7) % v_real;  // some rows' targets are elsewhere
  std::vector<float> mx(N), sz(2 * size_t(N)), loss(N);
  auto cpu_logits = x;
  cpu::Kernels::vocab_ce_max(cpu_logits.data(), mx.data(), N, V, v_begin, v_real);
  DeviceVector<T> dL(x);
  DeviceVector<int32_t> dT(tg);
  DeviceVector<float> dM(N), dS(2 * size_t(N)), dLoss(N);
  cuda::Kernels::vocab_ce_max(dL.get(), dM.get(), N, V, v_begin, v_real, 0);
  EXPECT_TRUE(same_bits(dM.host(), mx)) << "the max is exact";
  // Pretend another shard held a larger max for even rows, as the all-reduce would bring.
  for (int n = 0; n < N; n += 2) mx[n] += 0.5f;
  dM.upload(mx);
  cpu::Kernels::vocab_ce_sum_exp(cpu_logits.data(), sz.data(), mx.data(), tg.data(), N, V, v_begin,
                                 v_real);
  cuda::Kernels::vocab_ce_sum_exp(dL.get(), dS.get(), dM.get(), dT.get(), N, V, v_begin, v_real, 0);
  EXPECT_LE(rel_err(dS.host(), sz), 1e-5);
  EXPECT_LE(rel_err(widen(dL.host()), widen(cpu_logits)), 1e-5) << "fp32 keeps exp in place";
  for (int n = 0; n < N; ++n) sz[n] *= 1.75f;  // the other shards' share of the sum
  dS.upload(sz);
  cpu::Kernels::vocab_ce_grad(cpu_logits.data(), loss.data(), mx.data(), sz.data(), tg.data(), N, V,
                              v_begin, v_real, 0.25f);
  cuda::Kernels::vocab_ce_grad(dL.get(), dLoss.get(), dM.get(), dS.get(), dT.get(), N, V, v_begin,
                               v_real, 0.25f, 0);
  EXPECT_LE(rel_err(dLoss.host(), loss), 1e-6);
  EXPECT_LE(rel_err(widen(dL.host()), widen(cpu_logits)), tol);
}

TEST(CudaVocabParallelCrossEntropy, PassesMatchCpu) {
  ZT_REQUIRE_GPU();
  // A shard with the real/padding boundary inside, one in the middle, one all padding.
  for (const int begin : {0, 700, 1400}) {
    check_vocab_ce<float>(33, 700, begin, 1500, 1e-5);
    check_vocab_ce<bf16>(33, 700, begin, 1500, 1e-2);
    check_vocab_ce<fp16>(33, 700, begin, 1500, 1e-3);
  }
}

TEST(CudaVocabParallelCrossEntropy, BadTargetPoisonsTheRow) {
  ZT_REQUIRE_GPU();
  const int N = 2, V = 64;
  DeviceVector<float> dL(random_floats(size_t(N) * V, 5)), dM(std::vector<float>(N, 0.0f)),
      dS(std::vector<float>(2 * N, 1.0f)), dLoss(N);
  DeviceVector<int32_t> dT(std::vector<int32_t>{3, 64});
  cuda::Kernels::vocab_ce_grad(dL.get(), dLoss.get(), dM.get(), dS.get(), dT.get(), N, V, 0, 64,
                               1.0f, 0);
  const auto loss = dLoss.host(), g = dL.host();
  EXPECT_TRUE(std::isfinite(loss[0]));
  EXPECT_TRUE(std::isnan(loss[1]));
  EXPECT_TRUE(std::isnan(g[V + 10])) << "the gradient must not be left as raw logits";
}

// More segments than one launch takes (kMultiTensorGroup), of every size class.
std::vector<int64_t> segment_sizes() {
  std::vector<int64_t> n;
  for (int k = 0; k < kMultiTensorGroup + 37; ++k) n.push_back(k % 5 == 0 ? 0 : (k * 7919) % 3001);
  n[3] = 1;
  n[10] = 300001;
  return n;
}

template <typename T>
void check_sum_squares_multi() {
  const auto sizes = segment_sizes();
  std::vector<DeviceVector<T>> dx;
  std::vector<std::vector<T>> hx;
  for (size_t k = 0; k < sizes.size(); ++k) {
    hx.push_back(test::narrow<T>(random_floats(size_t(sizes[k]), 10 + uint32_t(k), -2, 2)));
    dx.emplace_back(hx.back());
  }
  std::vector<NormSegment> h, d;
  for (size_t k = 0; k < sizes.size(); ++k) {
    h.push_back({hx[k].data(), sizes[k]});
    d.push_back({dx[k].get(), sizes[k]});
  }
  std::vector<double> partials(kNormPartials);
  double want = 0;
  cpu::Kernels::sum_squares_multi<T>(&want, partials.data(), h.data(), int(h.size()));
  DeviceVector<double> dPart(partials.size()), dOut(1);
  cuda::Kernels::sum_squares_multi<T>(dOut.get(), dPart.get(), d.data(), int(d.size()), 0);
  const double got = dOut.host()[0];
  EXPECT_NEAR(got, want, 1e-12 * want);
  cuda::Kernels::sum_squares_multi<T>(dOut.get(), dPart.get(), d.data(), int(d.size()), 0);
  EXPECT_EQ(dOut.host()[0], got) << "run-to-run";
  cuda::Kernels::sum_squares_multi<T>(dOut.get(), dPart.get(), d.data(), 0, 0);
  EXPECT_EQ(dOut.host()[0], 0.0);
  // An inf in the last group: not finite.
  const size_t last = sizes.size() - 2;
  ASSERT_GT(sizes[last], 0);
  hx[last][0] = from_float<T>(INFINITY);
  dx[last].upload(hx[last]);
  cuda::Kernels::sum_squares_multi<T>(dOut.get(), dPart.get(), d.data(), int(d.size()), 0);
  EXPECT_FALSE(std::isfinite(dOut.host()[0]));
}

TEST(CudaMultiTensor, SumSquaresMatchesCpu) {
  ZT_REQUIRE_GPU();
  check_sum_squares_multi<float>();
  check_sum_squares_multi<bf16>();
  check_sum_squares_multi<fp16>();
}

template <typename G>
void check_adamw_multi() {
  const auto sizes = segment_sizes();
  AdamWParams ap;
  ap.lr = 2e-3f;
  ap.grad_scale = 0.25f;
  ap.step = 5;
  std::vector<std::vector<float>> p, m, v;
  std::vector<std::vector<G>> g;
  std::vector<DeviceVector<float>> dp, dm, dv;
  std::vector<DeviceVector<G>> dg;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const auto n = size_t(sizes[k]);
    p.push_back(random_floats(n, 30 + uint32_t(k)));
    m.push_back(random_floats(n, 40 + uint32_t(k), -0.1f, 0.1f));
    v.push_back(random_floats(n, 50 + uint32_t(k), 0.0f, 0.01f));
    g.push_back(test::narrow<G>(random_floats(n, 60 + uint32_t(k))));
    dp.emplace_back(p[k]);
    dm.emplace_back(m[k]);
    dv.emplace_back(v[k]);
    dg.emplace_back(g[k]);
  }
  std::vector<AdamWSegment> h, d;
  for (size_t k = 0; k < p.size(); ++k) {
    const float wd = k % 3 == 0 ? 0.0f : 0.01f;
    h.push_back({p[k].data(), m[k].data(), v[k].data(), g[k].data(), sizes[k], wd});
    d.push_back({dp[k].get(), dm[k].get(), dv[k].get(), dg[k].get(), sizes[k], wd});
  }
  cuda::Kernels::adamw_multi<G>(d.data(), int(d.size()), ap, 0);
  cpu::Kernels::adamw_multi<G>(h.data(), int(h.size()), ap);
  for (size_t k = 0; k < p.size(); ++k) {
    EXPECT_LE(rel_err(dp[k].host(), p[k]), 1e-6) << "segment " << k;
    EXPECT_LE(rel_err(dm[k].host(), m[k]), 1e-6) << "segment " << k;
    EXPECT_LE(rel_err(dv[k].host(), v[k]), 1e-6) << "segment " << k;
  }
}

TEST(CudaMultiTensor, AdamWMatchesCpu) {
  ZT_REQUIRE_GPU();
  check_adamw_multi<float>();
  check_adamw_multi<bf16>();
  check_adamw_multi<fp16>();
}

}  // namespace
}  // namespace zt
