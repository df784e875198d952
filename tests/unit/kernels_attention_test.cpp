// Causal self-attention: the tiled flash kernel against the naive algorithm it replaced, kept
// here only as the reference: the full [T, T] probabilities in double, the same dropout mask,
// and the closed-form backward through them (itself checked against finite differences). Shapes
// include T not a multiple of the 64-row tile, one token, several heads and batches; fp32, bf16
// and fp16, with and without dropout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/backend_memory.h"
#include "kernels/common/dropout.h"
#include "kernels/cpu/gemm_mixed.h"
#include "kernels/cpu/ops.h"
#include "src/core/half.h"
#include "tests/support/half_vectors.h"
#include "tests/support/kernels_testing.h"
#include "tests/support/max_rel_error.h"

namespace zt {
namespace {

using test::narrow;
using test::widen;

using testing::all_close;
using testing::finite_diff;
using testing::max_abs;
using testing::random_floats;
using testing::to_double;

struct AttnCase {
  int B, T, C, NH;
  float p;
  int G = 0;  // key/value heads (grouped-query attention); 0: NH
  int kv() const { return G > 0 ? G : NH; }
  // Elements of a qkv row: q of NH heads, k and v of kv() heads each.
  int row() const { return C + 2 * kv() * (C / NH); }
};

// The naive algorithm in double. Forward: out [B,T,C] and lse [B,NH,T]. With dout given, also
// dqkv: dV = (P*M)^T dO, dP = (dO V^T) * M, dS = P (dP - rowsum(dP P)), dQ = dS K scale,
// dK = dS^T Q scale, M the dropout multiplier of element (b, h, i, j) at counter
// ((b*NH + h)*T + i)*T + j.
struct Reference {
  std::vector<double> out, lse, dqkv;
  Reference(const std::vector<double>& qkv, const AttnCase& s, const DropoutParams& d,
            const std::vector<double>* dout = nullptr) {
    const int B = s.B, T = s.T, C = s.C, NH = s.NH, hd = C / NH, rep = NH / s.kv();
    const int Ckv = s.kv() * hd;
    out.assign(size_t(B) * T * C, 0);
    lse.assign(size_t(B) * NH * T, 0);
    if (dout != nullptr) dqkv.assign(qkv.size(), 0);
    const double scale = 1.0 / std::sqrt(double(hd));
    // Query head h reads key/value head h / rep, the same rows for every head of its group.
    auto at = [&](int b, int t, int part, int h) {
      const size_t off =
          part == 0 ? size_t(h) * hd : size_t(C) + size_t(part - 1) * Ckv + size_t(h / rep) * hd;
      return (size_t(b) * T + t) * s.row() + off;
    };
    std::vector<double> P(size_t(T) * T), M(size_t(T) * T);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h) {
        for (int i = 0; i < T; ++i) {
          double mx = -1e300;
          for (int j = 0; j <= i; ++j) {
            double sdot = 0;
            for (int e = 0; e < hd; ++e) sdot += qkv[at(b, i, 0, h) + e] * qkv[at(b, j, 1, h) + e];
            P[size_t(i) * T + j] = sdot * scale;
            mx = std::fmax(mx, sdot * scale);
          }
          double sum = 0;
          for (int j = 0; j <= i; ++j) sum += std::exp(P[size_t(i) * T + j] - mx);
          lse[(size_t(b) * NH + h) * T + i] = mx + std::log(sum);
          const size_t base = ((size_t(b) * NH + h) * T + i) * T;
          for (int j = 0; j <= i; ++j) {
            double& p = P[size_t(i) * T + j];
            p = std::exp(p - mx) / sum;
            M[size_t(i) * T + j] = dropout_scale(d, base + j);
            for (int e = 0; e < hd; ++e)
              out[(size_t(b) * T + i) * C + size_t(h) * hd + e] +=
                  p * M[size_t(i) * T + j] * qkv[at(b, j, 2, h) + e];
          }
        }
        if (dout == nullptr) continue;
        auto dO = [&](int i) { return &(*dout)[(size_t(b) * T + i) * C + size_t(h) * hd]; };
        for (int i = 0; i < T; ++i) {
          std::vector<double> dS(size_t(i) + 1);
          double dot = 0;
          for (int j = 0; j <= i; ++j) {
            const double pm = P[size_t(i) * T + j] * M[size_t(i) * T + j];
            double dpd = 0;
            for (int e = 0; e < hd; ++e) {
              dqkv[at(b, j, 2, h) + e] += pm * dO(i)[e];
              dpd += dO(i)[e] * qkv[at(b, j, 2, h) + e];
            }
            dS[j] = dpd * M[size_t(i) * T + j];
            dot += dS[j] * P[size_t(i) * T + j];
          }
          for (int j = 0; j <= i; ++j) {
            const double ds = P[size_t(i) * T + j] * (dS[j] - dot) * scale;
            for (int e = 0; e < hd; ++e) {
              dqkv[at(b, i, 0, h) + e] += ds * qkv[at(b, j, 1, h) + e];
              dqkv[at(b, j, 1, h) + e] += ds * qkv[at(b, i, 0, h) + e];
            }
          }
        }
      }
  }
};

// Forward and backward of the kernel in H on inputs representable in H (returned widened).
struct Outputs {
  std::vector<float> qkv, dout, out, lse, dqkv;
};
template <typename H>
Outputs run(const AttnCase& s, const DropoutParams& d, uint32_t seed) {
  Outputs r;
  r.qkv = widen(narrow<H>(random_floats(size_t(s.B) * s.T * s.row(), seed, -1.5f, 1.5f)));
  r.dout = widen(narrow<H>(random_floats(size_t(s.B) * s.T * s.C, seed + 1)));
  const auto qkv = narrow<H>(r.qkv), dout = narrow<H>(r.dout);
  std::vector<H> out(dout.size(), from_float<H>(7.0f)), dqkv(qkv.size(), from_float<H>(5.0f));
  r.lse.assign(size_t(s.B) * s.NH * s.T, 9.0f);
  std::vector<float> delta(r.lse.size(), -3.0f);
  cpu::Kernels::attention_forward(out.data(), r.lse.data(), qkv.data(), s.B, s.T, s.C, s.NH, s.kv(),
                                  d);
  cpu::Kernels::attention_backward(dqkv.data(), delta.data(), dout.data(), qkv.data(), out.data(),
                                   r.lse.data(), s.B, s.T, s.C, s.NH, s.kv(), d);
  r.out = widen(out);
  r.dqkv = widen(dqkv);
  return r;
}

double rel_err(const std::vector<float>& got, const std::vector<double>& want) {
  std::vector<float> w(want.begin(), want.end());
  return test::max_rel_error(got.data(), w.data(), w.size());
}

class KernelsAttention : public ::testing::TestWithParam<AttnCase> {};

// fp32: the tiled online softmax matches the naive one to fp32 rounding.
TEST_P(KernelsAttention, Fp32MatchesNaive) {
  const AttnCase s = GetParam();
  const DropoutParams d{s.p, 1234, 77};
  const Outputs r = run<float>(s, d, 1);
  const auto dout = to_double(r.dout);
  const Reference ref(to_double(r.qkv), s, d, &dout);
  EXPECT_TRUE(all_close(r.out, ref.out, 1e-5, 1e-6));
  EXPECT_TRUE(all_close(r.lse, ref.lse, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(r.dqkv, ref.dqkv, 1e-4, 1e-5 * max_abs(ref.dqkv)));
}

// Half: the same algorithm with the dropped probabilities and dS rounded to H, so the error
// is a few roundings of H (relative to the largest element), the statistics stay fp32.
template <typename H>
void expect_half_close(const AttnCase& s, double tol) {
  const DropoutParams d{s.p, 4321, 3};
  const Outputs r = run<H>(s, d, 5);
  const auto dout = to_double(r.dout);
  const Reference ref(to_double(r.qkv), s, d, &dout);
  EXPECT_LE(rel_err(r.out, ref.out), tol);
  EXPECT_TRUE(all_close(r.lse, ref.lse, 1e-5, 1e-5));
  EXPECT_LE(rel_err(r.dqkv, ref.dqkv), tol);
}
TEST_P(KernelsAttention, Bf16MatchesNaive) {
  expect_half_close<bf16>(GetParam(), 2e-2);
}
TEST_P(KernelsAttention, Fp16MatchesNaive) {
  expect_half_close<fp16>(GetParam(), 3e-3);
}

INSTANTIATE_TEST_SUITE_P(Shapes, KernelsAttention,
                         ::testing::Values(AttnCase{1, 1, 4, 1, 0.0f},      // one token
                                           AttnCase{2, 7, 12, 3, 0.0f},     // odd sizes
                                           AttnCase{2, 7, 12, 3, 0.3f},     // with dropout
                                           AttnCase{1, 64, 16, 2, 0.0f},    // exactly one tile
                                           AttnCase{1, 70, 8, 2, 0.2f},     // a partial tile
                                           AttnCase{2, 130, 64, 4, 0.1f},   // three tiles
                                           AttnCase{1, 200, 256, 2, 0.0f},  // hd 128
                                           // grouped-query attention: 1 group, 2 groups, a
                                           // group per head, T off the tiles, with dropout
                                           AttnCase{2, 70, 32, 4, 0.0f, 1},
                                           AttnCase{1, 133, 48, 6, 0.2f, 2},
                                           AttnCase{2, 65, 32, 4, 0.1f, 4},
                                           AttnCase{1, 7, 16, 4, 0.0f, 2}));

// bf16 on a CPU with AVX512-BF16 takes the batched path: groups of key/value heads, key blocks
// of 64 with the positions below each block's diagonal in chunks of 256, T padded to a whole
// block. These shapes cross every edge of it: T one past a block and a chunk, T not a multiple of
// the block over several chunks, one exact block, head counts that leave a smaller last group,
// hd 16 to 128, 1 to 8 query heads per key/value head. Checked against the double reference (the
// tolerance of Bf16MatchesNaive) and against the fp32 kernel on the same inputs.
class KernelsAttentionBatched : public ::testing::TestWithParam<AttnCase> {};

TEST_P(KernelsAttentionBatched, Bf16MatchesNaiveAndFp32) {
  if (!cpu::detail::onednn_bf16_available())
    GTEST_SKIP() << "no AVX512-BF16: bf16 attention takes the per-tile path (Shapes/*)";
  const AttnCase s = GetParam();
  const DropoutParams d{s.p, 4321, 3};
  const Outputs r = run<bf16>(s, d, 11);
  const auto dout = to_double(r.dout);
  const Reference ref(to_double(r.qkv), s, d, &dout);
  EXPECT_LE(rel_err(r.out, ref.out), 2e-2);
  EXPECT_TRUE(all_close(r.lse, ref.lse, 1e-5, 1e-5));
  EXPECT_LE(rel_err(r.dqkv, ref.dqkv), 2e-2);
  // The fp32 kernel on the same (bf16-representable) inputs.
  std::vector<float> out(r.out.size()), lse(r.lse.size()), delta(lse.size()), dqkv(r.qkv.size());
  cpu::Kernels::attention_forward(out.data(), lse.data(), r.qkv.data(), s.B, s.T, s.C, s.NH, s.kv(),
                                  d);
  cpu::Kernels::attention_backward(dqkv.data(), delta.data(), r.dout.data(), r.qkv.data(),
                                   out.data(), lse.data(), s.B, s.T, s.C, s.NH, s.kv(), d);
  EXPECT_LE(test::max_rel_error(r.out.data(), out.data(), out.size()), 2e-2);
  EXPECT_TRUE(all_close(r.lse, lse, 1e-5, 1e-5));
  EXPECT_LE(test::max_rel_error(r.dqkv.data(), dqkv.data(), dqkv.size()), 2e-2);
}

INSTANTIATE_TEST_SUITE_P(Shapes, KernelsAttentionBatched,
                         ::testing::Values(AttnCase{2, 257, 96, 3, 0.1f},   // a one-row block
                                           AttnCase{1, 300, 80, 5, 0.0f},   // 5 heads, hd 16
                                           AttnCase{3, 64, 64, 2, 0.0f},    // one exact block
                                           AttnCase{1, 520, 128, 2, 0.0f},  // three row chunks
                                           AttnCase{2, 129, 256, 4, 0.2f},  // hd 64, dropout
                                           AttnCase{1, 200, 512, 4, 0.0f},  // hd 128
                                           // grouped-query attention: the query heads of a
                                           // key/value head are rows of one problem
                                           AttnCase{1, 257, 128, 4, 0.1f, 2},  // 2 per group
                                           AttnCase{2, 130, 96, 6, 0.2f, 2},   // 3 per group
                                           AttnCase{1, 520, 128, 8, 0.0f, 1},  // 8, three chunks
                                           AttnCase{3, 65, 64, 4, 0.0f, 2}     // odd group count
                                           ));

// The closed-form reference backward against central finite differences of its forward.
TEST(KernelsAttention, ReferenceBackwardMatchesFiniteDifferences) {
  for (const AttnCase s :
       {AttnCase{2, 7, 12, 3, 0.0f}, AttnCase{1, 9, 8, 2, 0.3f}, AttnCase{1, 6, 16, 4, 0.2f, 2}}) {
    const DropoutParams d{s.p, 99, 5};
    const auto qkv = to_double(random_floats(size_t(s.B) * s.T * s.row(), 2, -1.5f, 1.5f));
    const auto R = to_double(random_floats(size_t(s.B) * s.T * s.C, 3));  // L = sum R * out
    const Reference ref(qkv, s, d, &R);
    const auto g = finite_diff(
        [&](const std::vector<double>& x) {
          const Reference f(x, s, d);
          double L = 0;
          for (size_t i = 0; i < f.out.size(); ++i) L += R[i] * f.out[i];
          return L;
        },
        qkv);
    EXPECT_TRUE(all_close(ref.dqkv, g, 1e-6, 1e-6 * max_abs(g)));
  }
}

TEST(KernelsAttention, DropoutReproducibleAndOffsetDependent) {
  const AttnCase s{1, 16, 8, 2, 0.5f};
  const auto qkv = random_floats(size_t(s.B) * s.T * 3 * s.C, 4);
  std::vector<float> o1(size_t(s.T) * s.C), o2(o1.size()), o3(o1.size()), lse(size_t(s.NH) * s.T);
  cpu::Kernels::attention_forward(o1.data(), lse.data(), qkv.data(), s.B, s.T, s.C, s.NH, s.kv(),
                                  {0.5f, 1, 0});
  cpu::Kernels::attention_forward(o2.data(), lse.data(), qkv.data(), s.B, s.T, s.C, s.NH, s.kv(),
                                  {0.5f, 1, 0});
  cpu::Kernels::attention_forward(o3.data(), lse.data(), qkv.data(), s.B, s.T, s.C, s.NH, s.kv(),
                                  {0.5f, 1, 1});
  EXPECT_TRUE(testing::bitwise_equal(o1, o2));
  EXPECT_FALSE(testing::bitwise_equal(o1, o3));
}

// A batch split into single samples with the counter offset of each sample's heads (what the
// tensor-parallel layer does per sample) gives the bits of the whole batch.
TEST(KernelsAttention, PerSampleCallsWithHeadOffsetsEqualTheBatch) {
  const AttnCase s{3, 70, 16, 2, 0.3f};
  const DropoutParams d{0.3f, 8, 11};
  const auto qkv = random_floats(size_t(s.B) * s.T * 3 * s.C, 6);
  const auto dout = random_floats(size_t(s.B) * s.T * s.C, 7);
  const size_t rows = size_t(s.NH) * s.T;
  std::vector<float> o1(dout.size()), l1(s.B * rows), g1(qkv.size()), w(l1.size());
  std::vector<float> o2 = o1, l2 = l1, g2 = g1;
  cpu::Kernels::attention_forward(o1.data(), l1.data(), qkv.data(), s.B, s.T, s.C, s.NH, s.kv(), d);
  cpu::Kernels::attention_backward(g1.data(), w.data(), dout.data(), qkv.data(), o1.data(),
                                   l1.data(), s.B, s.T, s.C, s.NH, s.kv(), d);
  for (int b = 0; b < s.B; ++b) {
    DropoutParams db = d;
    db.offset += uint64_t(b) * s.NH * s.T * s.T;
    const size_t q = size_t(b) * s.T * 3 * s.C, o = size_t(b) * s.T * s.C;
    cpu::Kernels::attention_forward(o2.data() + o, l2.data() + b * rows, qkv.data() + q, 1, s.T,
                                    s.C, s.NH, s.kv(), db);
    cpu::Kernels::attention_backward(g2.data() + q, w.data(), dout.data() + o, qkv.data() + q,
                                     o2.data() + o, l2.data() + b * rows, 1, s.T, s.C, s.NH, s.kv(),
                                     db);
  }
  EXPECT_TRUE(testing::bitwise_equal(o1, o2));
  EXPECT_TRUE(testing::bitwise_equal(l1, l2));
  EXPECT_TRUE(testing::bitwise_equal(g1, g2));
}

// Bound scratch (what the model takes from its pool) gives the bits of the per-thread heap
// buffers, for each path and precision; a slice smaller than cpu_attention_scratch_per_thread
// is refused, not overrun.
template <typename T>
void expect_bound_scratch_same_bits(DType t, int groups) {
  const AttnCase s{2, 130, 32, 4, 0.1f, groups};
  const DropoutParams d{0.1f, 3, 5};
  const auto qkv = narrow<T>(random_floats(size_t(s.B) * s.T * s.row(), 8));
  const auto dout = narrow<T>(random_floats(size_t(s.B) * s.T * s.C, 9));
  const size_t rows = size_t(s.NH) * s.T * s.B;
  const auto run = [&](std::vector<T>& o, std::vector<float>& l, std::vector<T>& g) {
    std::vector<float> w(rows);
    o.assign(dout.size(), T{});
    l.assign(rows, 0.0f);
    g.assign(qkv.size(), T{});
    cpu::Kernels::attention_forward(o.data(), l.data(), qkv.data(), s.B, s.T, s.C, s.NH, s.kv(), d);
    cpu::Kernels::attention_backward(g.data(), w.data(), dout.data(), qkv.data(), o.data(),
                                     l.data(), s.B, s.T, s.C, s.NH, s.kv(), d);
  };
  std::vector<T> o1, g1, o2, g2;
  std::vector<float> l1, l2;
  run(o1, l1, g1);
  const size_t per = cpu_attention_scratch_per_thread(s.B, s.T, s.C, s.NH, s.kv(), t);
  const int threads = cpu_kernel_threads();
  std::vector<unsigned char> mem(per * threads + 64);
  auto* base = mem.data() + (64 - reinterpret_cast<uintptr_t>(mem.data()) % 64) % 64;
  {
    const ScopedKernelScratch bind(KernelScratch{base, per, threads});
    run(o2, l2, g2);
  }
  EXPECT_EQ(std::memcmp(o1.data(), o2.data(), o1.size() * sizeof(T)), 0) << dtype_name(t);
  EXPECT_EQ(std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(T)), 0) << dtype_name(t);
  EXPECT_TRUE(testing::bitwise_equal(l1, l2)) << dtype_name(t);
  const ScopedKernelScratch small(KernelScratch{base, per - 64, threads});
  EXPECT_THROW(run(o2, l2, g2), Error) << dtype_name(t);
}

TEST(KernelsAttention, BoundScratchGivesTheSameBitsAndIsNotOverrun) {
  for (int groups : {0, 2}) {  // multi-head, and two query heads per key/value head
    expect_bound_scratch_same_bits<float>(DType::F32, groups);
    expect_bound_scratch_same_bits<bf16>(DType::BF16, groups);
    expect_bound_scratch_same_bits<fp16>(DType::F16, groups);
  }
}

}  // namespace
}  // namespace zt
