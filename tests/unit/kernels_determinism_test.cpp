// Every kernel twice on the same input gives bitwise-identical output (resume is bitwise), and
// the kernels that promise it give the same bits with 1 and 2 OpenMP threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/core/half.h"
#include "tests/support/half_vectors.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

using testing::bitwise_equal;
using testing::random_floats;

// Runs fill (which must recreate all of its outputs from scratch) and returns the outputs.
using Run = std::function<std::vector<std::vector<float>>()>;

void expect_reproducible(const char* name, const Run& run, bool across_threads) {
  const auto a = run();
  const auto b = run();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(bitwise_equal(a[i], b[i])) << name << " " << i;
  if (!across_threads) return;
  const int prev = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto c = run();
  omp_set_num_threads(prev < 2 ? 2 : prev);
  const auto d = run();
  omp_set_num_threads(prev);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(a[i], c[i])) << name << " 1 thread, output " << i;
    EXPECT_TRUE(bitwise_equal(a[i], d[i])) << name << " 2 threads, output " << i;
  }
}

constexpr int B = 2, T = 96, C = 256, NH = 4, N = B * T, V = 1000;

TEST(KernelsDeterminism, LinearAndEmbedding) {
  const auto x = random_floats(size_t(N) * C, 1), w = random_floats(size_t(3 * C) * C, 2),
             bias = random_floats(3 * C, 3), dy = random_floats(size_t(N) * 3 * C, 4);
  expect_reproducible(
      "linear",
      [&] {
        std::vector<float> y(size_t(N) * 3 * C), dx(size_t(N) * C), dw(w.size(), 0.5f),
            db(3 * C, 0.25f);
        cpu::Kernels::linear_forward(y.data(), x.data(), w.data(), bias.data(), N, C, 3 * C);
        cpu::Kernels::linear_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(),
                                      w.data(), N, C, 3 * C, false);
        return std::vector<std::vector<float>>{y, dx, dw, db};
      },
      false);  // OpenBLAS's own threading is not ours to promise
  std::vector<int32_t> tok(N);
  for (int i = 0; i < N; ++i) tok[i] = (i * 37) % 50;  // many repeats
  const auto wte = random_floats(size_t(V) * C, 5), wpe = random_floats(size_t(T) * C, 6);
  const auto dout = random_floats(size_t(N) * C, 7);
  expect_reproducible(
      "embedding",
      [&] {
        std::vector<float> out(size_t(N) * C), dwte(wte.size(), 0.0f), dwpe(wpe.size(), 0.0f);
        cpu::Kernels::embedding_forward(out.data(), tok.data(), wte.data(), wpe.data(), B, T, C, 0,
                                        V);
        cpu::Kernels::embedding_backward(dwte.data(), dwpe.data(), dout.data(), tok.data(), B, T, C,
                                         0, V);
        return std::vector<std::vector<float>>{out, dwte, dwpe};
      },
      true);
}

TEST(KernelsDeterminism, LayerNormGeluDropout) {
  const auto x = random_floats(size_t(N) * C, 8), w = random_floats(C, 9), b = random_floats(C, 10),
             dout = random_floats(size_t(N) * C, 11);
  expect_reproducible(
      "layernorm",
      [&] {
        std::vector<float> out(x.size()), mean(N), rstd(N), dx(x.size(), 0.0f), dw(C, 0.0f),
            db(C, 0.0f);
        cpu::Kernels::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                        b.data(), N, C);
        cpu::Kernels::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(),
                                         w.data(), mean.data(), rstd.data(), N, C);
        return std::vector<std::vector<float>>{out, mean, rstd, dx, dw, db};
      },
      true);
  const int64_t n = int64_t{N} * C;
  expect_reproducible(
      "gelu+dropout",
      [&] {
        std::vector<float> y(n), dx(n), r(n), dr(n);
        cpu::Kernels::gelu_forward(y.data(), x.data(), n);
        cpu::Kernels::gelu_backward(dx.data(), x.data(), dout.data(), n);
        cpu::Kernels::dropout_add_forward(r.data(), x.data(), y.data(), n, {0.1f, 5, 17});
        cpu::Kernels::dropout_backward(dr.data(), dout.data(), n, {0.1f, 5, 17});
        return std::vector<std::vector<float>>{y, dx, r, dr};
      },
      true);
}

TEST(KernelsDeterminism, Attention) {
  const auto qkv = random_floats(size_t(N) * 3 * C, 12), dout = random_floats(size_t(N) * C, 13);
  for (float p : {0.0f, 0.1f}) {
    expect_reproducible(
        "attention",
        [&] {
          std::vector<float> out(size_t(N) * C), lse(size_t(B) * NH * T), delta(lse.size()),
              dqkv(qkv.size());
          cpu::Kernels::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, NH,
                                          {p, 3, 0});
          cpu::Kernels::attention_backward(dqkv.data(), delta.data(), dout.data(), qkv.data(),
                                           out.data(), lse.data(), B, T, C, NH, NH, {p, 3, 0});
          return std::vector<std::vector<float>>{out, lse, dqkv};
        },
        true);
  }
}

// bf16 attention (the batched oneDNN path where the CPU has AVX512-BF16): its groups of
// key/value heads do not depend on the thread count, and each group is one thread's work; with
// multi-head and with grouped-query attention (qkv sized for the former serves both).
TEST(KernelsDeterminism, AttentionBf16) {
  const auto qkv = test::narrow<bf16>(random_floats(size_t(N) * 3 * C, 12));
  const auto dout = test::narrow<bf16>(random_floats(size_t(N) * C, 13));
  for (int kv : {NH, NH / 2})
    for (float p : {0.0f, 0.1f}) {
      expect_reproducible(
          "attention bf16",
          [&] {
            std::vector<bf16> out(size_t(N) * C), dqkv(qkv.size());
            std::vector<float> lse(size_t(B) * NH * T), delta(lse.size());
            cpu::Kernels::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, kv,
                                            {p, 3, 0});
            cpu::Kernels::attention_backward(dqkv.data(), delta.data(), dout.data(), qkv.data(),
                                             out.data(), lse.data(), B, T, C, NH, kv, {p, 3, 0});
            return std::vector<std::vector<float>>{test::widen(out), lse, test::widen(dqkv)};
          },
          true);
    }
}

TEST(KernelsDeterminism, CrossEntropyAdamWReductionsCasts) {
  const auto logits = random_floats(size_t(N) * V, 14, -5, 5);
  std::vector<int32_t> tg(N);
  for (int i = 0; i < N; ++i) tg[i] = (i * 13) % 990;
  expect_reproducible(
      "cross_entropy",
      [&] {
        auto g = logits;
        std::vector<float> losses(N);
        cpu::Kernels::softmax_cross_entropy(g.data(), losses.data(), tg.data(), N, V, 990,
                                            1.0f / N);
        return std::vector<std::vector<float>>{g, losses};
      },
      true);
  const int64_t n = 300001;
  const auto p0 = random_floats(n, 15), g = random_floats(n, 16);
  expect_reproducible(
      "adamw+reductions+casts",
      [&] {
        auto p = p0;
        std::vector<float> m(n, 0.0f), v(n, 0.0f);
        cpu::AdamWParams ap;
        ap.lr = 1e-3f;
        ap.weight_decay = 0.1f;
        cpu::Kernels::adamw(p.data(), m.data(), v.data(), g.data(), n, ap);
        std::vector<bf16> hb(n);
        std::vector<fp16> hf(n);
        cpu::Kernels::cast(hb.data(), p.data(), n);
        cpu::Kernels::cast(hf.data(), p.data(), n);
        cpu::Kernels::accumulate(hf.data(), g.data(), n);
        std::vector<float> back(n);
        cpu::Kernels::cast(back.data(), hf.data(), n);
        const double s[3] = {cpu::Kernels::sum_squares(p.data(), n),
                             cpu::Kernels::sum_squares(hb.data(), n),
                             cpu::Kernels::sum_squares(hf.data(), n)};
        std::vector<float> sums(6);
        std::memcpy(sums.data(), s, sizeof s);
        return std::vector<std::vector<float>>{p, m, v, back, sums};
      },
      true);
}

}  // namespace
}  // namespace zt
