// The CUDA mixture-of-experts kernels against the CPU ones (which tests/unit/kernels_moe_test.cpp
// checks against double-precision references) on the same inputs: the same experts, scores and
// weights within fp32 rounding, the same row moves bit for bit (each element is moved or summed
// in the same order on both), the weights' gradients within fp32 summation order; the grouped
// GEMM and its weight gradient with an expert that received no rows.
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

TEST(CudaMoe, RoutingMatchesCpu) {
  ZT_REQUIRE_GPU();
  const int N = 1000;
  for (const MoeRouting r : {MoeRouting{8, 2, false, true}, MoeRouting{64, 6, true, false}}) {
    const std::vector<float> logits = random_floats(size_t(N) * r.E, 31, -3, 3);
    const std::vector<float> dw = random_floats(size_t(N) * r.k, 32);
    const std::vector<float> ds = random_floats(size_t(r.E), 33);
    std::vector<float> scores(logits.size()), weights(dw.size()), dlogits(logits.size());
    std::vector<int32_t> experts(dw.size());
    cpu::Kernels::moe_route_forward(scores.data(), experts.data(), weights.data(), logits.data(), N,
                                    r);
    cpu::Kernels::moe_route_backward(dlogits.data(), scores.data(), experts.data(), dw.data(),
                                     ds.data(), N, r);
    DeviceVector<float> gl(logits), gs(scores.size()), gw(weights.size()), gdw(dw), gds(ds),
        gdl(dlogits.size());
    DeviceVector<int32_t> ge(experts.size());
    cuda::Kernels::moe_route_forward(gs.get(), ge.get(), gw.get(), gl.get(), N, r, 0);
    cuda::Kernels::moe_route_backward(gdl.get(), gs.get(), ge.get(), gdw.get(), gds.get(), N, r, 0);
    EXPECT_EQ(ge.host(), experts) << "E " << r.E;
    EXPECT_LE(rel_err(gs.host(), scores), 1e-6) << "E " << r.E;
    EXPECT_LE(rel_err(gw.host(), weights), 1e-6) << "E " << r.E;
    EXPECT_LE(rel_err(gdl.host(), dlogits), 1e-5) << "E " << r.E;
  }
}

template <typename H>
void check_row_moves() {
  const int N = 700, k = 2, C = 300, M = N * k - 100;
  std::vector<int32_t> slots(size_t(N) * k);
  for (int i = 0; i < N * k; ++i) slots[size_t(i)] = i < M ? (i * 7) % M : -1;  // a permutation
  const auto x = narrow<H>(random_floats(size_t(N) * C, 41));
  const auto dy = narrow<H>(random_floats(size_t(N) * C, 42));
  const std::vector<float> w = random_floats(size_t(N) * k, 43, 0, 1);
  std::vector<H> rows(size_t(M) * C), y(x.size()), drows(rows.size());
  std::vector<float> dw(w.size());
  cpu::Kernels::moe_dispatch(rows.data(), x.data(), slots.data(), N, k, C);
  cpu::Kernels::moe_combine(y.data(), rows.data(), slots.data(), w.data(), N, k, C);
  cpu::Kernels::moe_combine_backward(drows.data(), dw.data(), dy.data(), rows.data(), slots.data(),
                                     w.data(), N, k, C);
  DeviceVector<H> gx(x), gdy(dy), grows(rows.size()), gy(y.size()), gdrows(rows.size());
  DeviceVector<float> gwt(w), gdw(dw.size());
  DeviceVector<int32_t> gslots(slots);
  cuda::Kernels::moe_dispatch(grows.get(), gx.get(), gslots.get(), N, k, C, 0);
  cuda::Kernels::moe_combine(gy.get(), grows.get(), gslots.get(), gwt.get(), N, k, C, 0);
  cuda::Kernels::moe_combine_backward(gdrows.get(), gdw.get(), gdy.get(), grows.get(), gslots.get(),
                                      gwt.get(), N, k, C, 0);
  EXPECT_EQ(widen(grows.host()), widen(rows));
  EXPECT_EQ(widen(gy.host()), widen(y));
  EXPECT_EQ(widen(gdrows.host()), widen(drows));
  EXPECT_LE(rel_err(gdw.host(), dw), 1e-5);
}

TEST(CudaMoe, RowMovesMatchCpu) {
  ZT_REQUIRE_GPU();
  check_row_moves<float>();
  check_row_moves<bf16>();
  check_row_moves<fp16>();
}

template <typename H>
void check_grouped_gemm() {
  const int E = 5, N = 96, K = 80;
  const std::vector<int64_t> rows = {70, 0, 129, 1, 33};
  const int64_t M = 233;
  const auto a = narrow<H>(random_floats(size_t(M) * K, 51));
  const auto b = narrow<H>(random_floats(size_t(E) * N * K, 52));
  const auto dc = narrow<H>(random_floats(size_t(M) * N, 53));
  std::vector<float> c(size_t(M) * N), db(b.size(), 1.0f);
  cpu::Kernels::grouped_gemm(true, rows.data(), E, N, K, 1.0f, a.data(), b.data(), 0.0f, c.data());
  cpu::Kernels::grouped_gemm_wgrad(rows.data(), E, N, K, 1.0f, dc.data(), a.data(), 1.0f,
                                   db.data());
  DeviceVector<H> ga(a), gb(b), gdc(dc);
  DeviceVector<float> gc(c.size()), gdb(std::vector<float>(b.size(), 1.0f));
  cuda::Kernels::grouped_gemm(true, rows.data(), E, N, K, 1.0f, ga.get(), gb.get(), 0.0f, gc.get(),
                              0);
  cuda::Kernels::grouped_gemm_wgrad(rows.data(), E, N, K, 1.0f, gdc.get(), ga.get(), 1.0f,
                                    gdb.get(), 0);
  EXPECT_LE(rel_err(gc.host(), c), 1e-5);
  EXPECT_LE(rel_err(gdb.host(), db), 1e-5);
}

TEST(CudaMoe, GroupedGemmMatchesCpu) {
  ZT_REQUIRE_GPU();
  check_grouped_gemm<float>();
  check_grouped_gemm<bf16>();
}

}  // namespace
}  // namespace zt
