// The CUDA flash attention against the CPU flash attention (the same algorithm and
// kernels/common/attention.h math; the CPU one is checked against the naive algorithm in
// tests/unit/kernels_attention_test.cpp) on the same inputs, representable in the working
// precision. Tolerances are max |gpu - cpu| / max |cpu| (tests/support/max_rel_error.h):
//   fp32: 1e-5 forward and lse, 1e-4 backward (fp32 both, only the summation order differs);
//   bf16 / fp16: both round the dropped probabilities and dS to T once, as operands of products
//   with fp32 accumulation, but a value near a rounding boundary can land on either side, so a
//   few ulps of T: 2e-2 / 3e-3 (the CPU-vs-naive tolerance), lse 1e-5 (fp32 statistics).
// Shapes: T not a multiple of the 64 (or smaller) tile, one token, several heads and batches,
// head sizes not a multiple of 16 and up to 128, with and without dropout (a mask that
// disagreed with the CPU's would give O(1) differences), and more heads (B·NH) than one grid
// dimension holds; grouped-query attention with 1 and 2 key/value heads. Backward run twice must
// give identical bits (no atomics).
#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "src/core/half.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_cuda_testing.h"
#include "tests/support/half_vectors.h"

namespace zt {
namespace {

using test::narrow;
using test::widen;

using gpu_test::DeviceVector;
using gpu_test::rel_err;
using testing::random_floats;
using testing::same_bits;

struct AttnCase {
  int B, T, C, NH;
  float p;
  int G = 0;  // key/value heads (grouped-query attention); 0: NH
  int kv() const { return G > 0 ? G : NH; }
};

template <typename H>
void check(const AttnCase& s, double tol_out, double tol_grad) {
  const DropoutParams drop{s.p, 1234, 99};
  const size_t n_qkv = size_t(s.B) * s.T * (s.C + 2 * s.kv() * (s.C / s.NH));
  const size_t n_out = size_t(s.B) * s.T * s.C;
  const size_t rows = size_t(s.B) * s.NH * s.T;
  const auto qkv = narrow<H>(random_floats(n_qkv, 20, -2.0f, 2.0f));
  const auto dout = narrow<H>(random_floats(n_out, 21));
  std::vector<H> out(n_out), dqkv(n_qkv);
  std::vector<float> lse(rows), delta(rows);
  cpu::Kernels::attention_forward(out.data(), lse.data(), qkv.data(), s.B, s.T, s.C, s.NH, s.kv(),
                                  drop);
  cpu::Kernels::attention_backward(dqkv.data(), delta.data(), dout.data(), qkv.data(), out.data(),
                                   lse.data(), s.B, s.T, s.C, s.NH, s.kv(), drop);

  DeviceVector<H> dq(qkv), dd(dout), dO(n_out), dG(n_qkv);
  DeviceVector<float> dL(rows), dD(rows);
  cuda::Kernels::attention_forward(dO.get(), dL.get(), dq.get(), s.B, s.T, s.C, s.NH, s.kv(), drop,
                                   0);
  const auto got_out = dO.host();
  EXPECT_LE(rel_err(widen(got_out), widen(out)), tol_out) << "forward";
  EXPECT_LE(rel_err(dL.host(), lse), 1e-5) << "lse";
  // Backward from the CPU's forward (the same out and lse), so only backward differs.
  dO.upload(out);
  dL.upload(lse);
  std::vector<H> first;
  for (int run = 0; run < 2; ++run) {
    cuda::Kernels::attention_backward(dG.get(), dD.get(), dd.get(), dq.get(), dO.get(), dL.get(),
                                      s.B, s.T, s.C, s.NH, s.kv(), drop, 0);
    const auto got = dG.host();
    EXPECT_LE(rel_err(widen(got), widen(dqkv)), tol_grad) << "backward";
    if (run == 0)
      first = got;
    else
      EXPECT_TRUE(same_bits(got, first)) << "backward is deterministic";
  }
}

class CudaAttention : public ::testing::TestWithParam<AttnCase> {};

TEST_P(CudaAttention, Fp32MatchesCpu) {
  ZT_REQUIRE_GPU();
  check<float>(GetParam(), 1e-5, 1e-4);
}
TEST_P(CudaAttention, Bf16MatchesCpu) {
  ZT_REQUIRE_GPU();
  check<bf16>(GetParam(), 2e-2, 2e-2);
}
TEST_P(CudaAttention, Fp16MatchesCpu) {
  ZT_REQUIRE_GPU();
  check<fp16>(GetParam(), 3e-3, 3e-3);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttention,
                         ::testing::Values(AttnCase{1, 1, 16, 1, 0.0f},     // one token
                                           AttnCase{2, 16, 32, 4, 0.0f},    // one partial tile
                                           AttnCase{2, 37, 48, 3, 0.0f},    // hd 16
                                           AttnCase{3, 29, 24, 6, 0.25f},   // hd 4, dropout
                                           AttnCase{1, 70, 40, 2, 0.1f},    // hd 20, two tiles
                                           AttnCase{2, 200, 256, 4, 0.1f},  // hd 64, 4 tiles
                                           AttnCase{1, 130, 256, 2, 0.0f},  // hd 128
                                           // B·NH = 65,600 heads: more than grid y's 65,535,
                                           // folded into two planes, the second mostly padding
                                           AttnCase{8200, 3, 32, 8, 0.1f},
                                           // grouped-query attention: 1 group, 2 groups of 3
                                           // heads, T off the tiles, dropout
                                           AttnCase{2, 70, 64, 4, 0.0f, 1},
                                           AttnCase{1, 133, 96, 6, 0.1f, 2},
                                           AttnCase{2, 200, 256, 4, 0.1f, 2}));

// attention_block_forward / attention_block_backward (ring attention's blocks) against the CPU's
// on the same inputs: a sequence of `chunks` chunks, every query chunk merging its blocks (the
// diagonal last, one wholly masked block first), then every block's gradients summed. The CPU
// composition equals the whole-sequence attention (tests/unit/kernels_attention_block_test.cpp).
struct BlockCase {
  int chunks, chunk, C, NH, NKV;
  float p;
};

template <typename H>
void check_blocks(const BlockCase& s, double tol_out, double tol_grad) {
  const DropoutParams drop{s.p, 4321, 7};
  const int T = s.chunks * s.chunk, hd = s.C / s.NH, Ckv = s.NKV * hd, row = s.C + 2 * Ckv;
  const auto qkv = narrow<H>(random_floats(size_t(T) * row, 30, -2.0f, 2.0f));
  const auto dout = narrow<H>(random_floats(size_t(T) * s.C, 31));
  std::vector<H> out(size_t(T) * s.C);
  std::vector<float> lse(size_t(s.NH) * T), delta(lse.size());
  cpu::Kernels::attention_forward(out.data(), lse.data(), qkv.data(), 1, T, s.C, s.NH, s.NKV, drop);
  DeviceVector<H> dq(qkv), dd(dout), dO(out);
  DeviceVector<float> dL(lse), acc(size_t(T) * s.C), accL(lse.size()), g_q(size_t(T) * s.C),
      g_kv(size_t(T) * 2 * Ckv), work(size_t(s.NH) * s.chunk);
  std::vector<float> cpu_acc(size_t(T) * s.C), cpu_accL(lse.size());
  std::vector<float> cpu_q(size_t(T) * s.C, 0.0f), cpu_kv(size_t(T) * 2 * Ckv, 0.0f);
  std::vector<float> cpu_work(size_t(s.NH) * s.chunk);
  g_q.upload(cpu_q);
  g_kv.upload(cpu_kv);
  for (int a = 0; a < s.chunks; ++a) {
    std::vector<int> order;
    if (a + 1 < s.chunks) order.push_back(a + 1);
    for (int b = 0; b <= a; ++b) order.push_back(b);  // the diagonal last
    bool merge = false;
    for (int b : order) {
      const AttentionBlock blk{s.chunk, s.chunk, a * s.chunk, b * s.chunk, T, row, row, T};
      const size_t qo = size_t(a) * s.chunk, ko = size_t(b) * s.chunk;
      cuda::Kernels::attention_block_forward(acc.get() + qo * s.C, accL.get() + qo,
                                             dq.get() + qo * row, dq.get() + s.C + ko * row, s.C,
                                             s.NH, s.NKV, blk, merge, drop, 0);
      cpu::Kernels::attention_block_forward(cpu_acc.data() + qo * s.C, cpu_accL.data() + qo,
                                            qkv.data() + qo * row, qkv.data() + s.C + ko * row, s.C,
                                            s.NH, s.NKV, blk, merge, drop);
      cuda::Kernels::attention_block_backward(g_q.get() + qo * s.C, g_kv.get() + ko * 2 * Ckv,
                                              work.get(), dd.get() + qo * s.C, dO.get() + qo * s.C,
                                              dq.get() + qo * row, dq.get() + s.C + ko * row,
                                              dL.get() + qo, s.C, s.NH, s.NKV, blk, drop, 0);
      cpu::Kernels::attention_block_backward(
          cpu_q.data() + qo * s.C, cpu_kv.data() + ko * 2 * Ckv, cpu_work.data(),
          dout.data() + qo * s.C, out.data() + qo * s.C, qkv.data() + qo * row,
          qkv.data() + s.C + ko * row, lse.data() + qo, s.C, s.NH, s.NKV, blk, drop);
      merge = true;
    }
  }
  EXPECT_LE(rel_err(acc.host(), cpu_acc), tol_out) << "forward";
  EXPECT_LE(rel_err(accL.host(), cpu_accL), 1e-5) << "lse";
  EXPECT_LE(rel_err(g_q.host(), cpu_q), tol_grad) << "dq";
  EXPECT_LE(rel_err(g_kv.host(), cpu_kv), tol_grad) << "dkv";
}

class CudaAttentionBlock : public ::testing::TestWithParam<BlockCase> {};

TEST_P(CudaAttentionBlock, Fp32MatchesCpu) {
  ZT_REQUIRE_GPU();
  check_blocks<float>(GetParam(), 1e-5, 1e-4);
}
TEST_P(CudaAttentionBlock, Bf16MatchesCpu) {
  ZT_REQUIRE_GPU();
  check_blocks<bf16>(GetParam(), 2e-2, 2e-2);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttentionBlock,
                         ::testing::Values(BlockCase{4, 16, 32, 4, 4, 0.0f},
                                           BlockCase{4, 37, 48, 3, 3, 0.1f},
                                           BlockCase{8, 70, 64, 4, 1, 0.0f},
                                           BlockCase{6, 65, 256, 4, 2, 0.1f}));

}  // namespace
}  // namespace zt
