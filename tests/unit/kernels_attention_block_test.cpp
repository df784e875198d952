// attention_block_forward / attention_block_backward, the ring steps of context parallelism,
// against attention_forward / attention_backward over the whole sequence: the sequence cut into
// chunks, every query chunk's blocks (one per key chunk at or before it, merged in an order
// unlike the sequence's, plus blocks wholly right of the diagonal, which must change nothing)
// give the whole sequence's output and lse, and the blocks' gradients summed give its dqkv.
// Chunk sizes not a multiple of the 64-row tile, grouped-query attention, dropout (the masks by
// position in the whole sequence), fp32 and bf16.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/common/attention.h"
#include "kernels/cpu/ops.h"
#include "src/core/error.h"
#include "src/core/half.h"
#include "tests/support/half_vectors.h"
#include "tests/support/kernels_testing.h"
#include "tests/support/max_rel_error.h"

namespace zt {
namespace {

using test::max_rel_error;
using test::narrow;
using test::widen;
using testing::random_floats;

struct BlockCase {
  int chunks, chunk, C, NH, NKV;
  float p;
  int T() const { return chunks * chunk; }
  int hd() const { return C / NH; }
  int Ckv() const { return NKV * hd(); }
  int row() const { return C + 2 * Ckv(); }
};

// The block of query chunk a against key chunk b, q and kv read in place from qkv rows.
AttentionBlock block_of(const BlockCase& s, int a, int b) {
  return {s.chunk, s.chunk, a * s.chunk, b * s.chunk, s.T(), s.row(), s.row(), s.T()};
}

// The key chunks query chunk a meets, in the order the test merges them: the diagonal last,
// the rest from the far end, and one chunk right of the diagonal (wholly masked) first.
std::vector<int> key_order(const BlockCase& s, int a) {
  std::vector<int> order;
  if (a + 1 < s.chunks) order.push_back(a + 1);
  for (int b = 0; b < a; ++b) order.push_back(b);
  order.push_back(a);
  return order;
}

struct Result {
  std::vector<float> out, lse, dqkv;
};

template <typename H>
void expect_blocks_equal_whole(const BlockCase& s, double tol_out, double tol_grad) {
  const DropoutParams drop{s.p, 77, 5};
  const int T = s.T();
  const auto qkv = narrow<H>(random_floats(size_t(T) * s.row(), 3, -1.5f, 1.5f));
  const auto dout = narrow<H>(random_floats(size_t(T) * s.C, 4));
  // The whole sequence.
  std::vector<H> out(size_t(T) * s.C), dqkv(qkv.size());
  std::vector<float> lse(size_t(s.NH) * T), delta(lse.size());
  cpu::Kernels::attention_forward(out.data(), lse.data(), qkv.data(), 1, T, s.C, s.NH, s.NKV, drop);
  cpu::Kernels::attention_backward(dqkv.data(), delta.data(), dout.data(), qkv.data(), out.data(),
                                   lse.data(), 1, T, s.C, s.NH, s.NKV, drop);
  // The blocks.
  std::vector<float> bout(out.size(), 5.0f), blse(lse.size(), 3.0f);  // the first block writes
  for (int a = 0; a < s.chunks; ++a) {
    bool merge = false;
    for (int b : key_order(s, a)) {
      cpu::Kernels::attention_block_forward(bout.data() + size_t(a) * s.chunk * s.C,
                                            blse.data() + size_t(a) * s.chunk,
                                            qkv.data() + size_t(a) * s.chunk * s.row(),
                                            qkv.data() + s.C + size_t(b) * s.chunk * s.row(), s.C,
                                            s.NH, s.NKV, block_of(s, a, b), merge, drop);
      merge = true;
    }
  }
  EXPECT_LE(max_rel_error(bout, widen(out)), tol_out);
  EXPECT_LE(max_rel_error(blse, lse), 1e-5);
  // Backward from the whole sequence's output and lse (what the ring keeps).
  std::vector<float> dq(size_t(T) * s.C, 0.0f), dkv(size_t(T) * 2 * s.Ckv(), 0.0f);
  std::vector<float> work(size_t(s.NH) * s.chunk);
  for (int a = 0; a < s.chunks; ++a)
    for (int b : key_order(s, a))
      cpu::Kernels::attention_block_backward(
          dq.data() + size_t(a) * s.chunk * s.C, dkv.data() + size_t(b) * s.chunk * 2 * s.Ckv(),
          work.data(), dout.data() + size_t(a) * s.chunk * s.C,
          out.data() + size_t(a) * s.chunk * s.C, qkv.data() + size_t(a) * s.chunk * s.row(),
          qkv.data() + s.C + size_t(b) * s.chunk * s.row(), lse.data() + size_t(a) * s.chunk, s.C,
          s.NH, s.NKV, block_of(s, a, b), drop);
  // The whole's dqkv rows as [q | k v], beside the blocks' dq and dkv.
  const auto g = widen(dqkv);
  std::vector<float> want_q, want_kv, got_kv;
  for (int t = 0; t < T; ++t) {
    const float* r = g.data() + size_t(t) * s.row();
    want_q.insert(want_q.end(), r, r + s.C);
    want_kv.insert(want_kv.end(), r + s.C, r + s.row());
  }
  EXPECT_LE(max_rel_error(dq, want_q), tol_grad);
  EXPECT_LE(max_rel_error(dkv, want_kv), tol_grad);
}

class KernelsAttentionBlock : public ::testing::TestWithParam<BlockCase> {};

TEST_P(KernelsAttentionBlock, Fp32BlocksEqualTheWholeSequence) {
  expect_blocks_equal_whole<float>(GetParam(), 1e-5, 1e-5);
}

// bf16 (the batched oneDNN path where the CPU has bf16 instructions) and fp16 (the per-tile path
// always): the whole sequence's output is rounded to T once, the blocks' stays fp32; gradients
// are rounded once by the whole, not by the blocks (fp32 sums).
TEST_P(KernelsAttentionBlock, Bf16BlocksEqualTheWholeSequence) {
  expect_blocks_equal_whole<bf16>(GetParam(), 8e-3, 2e-2);
}
TEST_P(KernelsAttentionBlock, Fp16BlocksEqualTheWholeSequence) {
  expect_blocks_equal_whole<fp16>(GetParam(), 1e-3, 3e-3);
}

INSTANTIATE_TEST_SUITE_P(Shapes, KernelsAttentionBlock,
                         ::testing::Values(BlockCase{4, 16, 32, 4, 4, 0.0f},
                                           BlockCase{4, 37, 32, 4, 2, 0.0f},
                                           BlockCase{8, 70, 64, 4, 1, 0.0f},
                                           BlockCase{4, 37, 32, 4, 2, 0.25f},
                                           BlockCase{6, 65, 48, 3, 3, 0.1f}));

// A block of rows that see none of its keys changes neither the output nor the lse when merged,
// writes 0 and -inf when not, and adds no gradient.
TEST(KernelsAttentionBlock, BlockRightOfTheDiagonalChangesNothing) {
  const BlockCase s{2, 20, 16, 2, 2, 0.0f};
  const auto qkv = random_floats(size_t(s.T()) * s.row(), 9);
  std::vector<float> out(size_t(s.chunk) * s.C, 0.5f), lse(size_t(s.NH) * s.T(), 1.25f);
  const auto out0 = out, lse0 = lse;
  const AttentionBlock blk = block_of(s, 0, 1);
  cpu::Kernels::attention_block_forward(out.data(), lse.data(), qkv.data(),
                                        qkv.data() + s.C + size_t(s.chunk) * s.row(), s.C, s.NH,
                                        s.NKV, blk, true, DropoutParams{});
  EXPECT_TRUE(testing::bitwise_equal(out, out0));
  EXPECT_TRUE(testing::bitwise_equal(lse, lse0));
  cpu::Kernels::attention_block_forward(out.data(), lse.data(), qkv.data(),
                                        qkv.data() + s.C + size_t(s.chunk) * s.row(), s.C, s.NH,
                                        s.NKV, blk, false, DropoutParams{});
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return v == 0.0f; }));
  for (int h = 0; h < s.NH; ++h)
    for (int i = 0; i < s.chunk; ++i) EXPECT_EQ(lse[size_t(h) * s.T() + i], -INFINITY);
  out = out0;
  std::vector<float> dq(out.size(), 0.0f), dkv(size_t(s.chunk) * 2 * s.Ckv(), 0.0f);
  std::vector<float> work(size_t(s.NH) * s.chunk), dout(out.size(), 1.0f);
  cpu::Kernels::attention_block_backward(dq.data(), dkv.data(), work.data(), dout.data(),
                                         out.data(), qkv.data(),
                                         qkv.data() + s.C + size_t(s.chunk) * s.row(), lse.data(),
                                         s.C, s.NH, s.NKV, blk, DropoutParams{});
  auto zero = [](float v) { return v == 0.0f; };
  EXPECT_TRUE(std::all_of(dq.begin(), dq.end(), zero));
  EXPECT_TRUE(std::all_of(dkv.begin(), dkv.end(), zero));
}

TEST(KernelsAttentionBlock, RefusesABlockOutsideTheSequence) {
  const BlockCase s{2, 8, 16, 2, 2, 0.0f};
  std::vector<float> qkv(size_t(s.T()) * s.row()), out(size_t(s.chunk) * s.C), lse(64);
  AttentionBlock blk = block_of(s, 1, 0);
  blk.q_pos = s.T() - 2;  // its rows run past the sequence
  EXPECT_THROW(
      cpu::Kernels::attention_block_forward(out.data(), lse.data(), qkv.data(), qkv.data() + s.C,
                                            s.C, s.NH, s.NKV, blk, false, DropoutParams{}),
      Error);
}

}  // namespace
}  // namespace zt
