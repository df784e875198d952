// cpu::gemm_mixed on both paths (oneDNN and convert-and-sgemm) against a double-precision
// reference computed from the rounded half inputs, so the only errors left are fp32 accumulation
// and the one rounding of a half result.
//
// Tolerances, per element, with u = 2^-24 and mag = |alpha| sum_k |a_ik b_kj| + |beta c_ij|:
//   fp32 C:  kAccUlps * u * sqrt(K + 2) * mag. The deterministic worst case of K fp32 additions is
//            K * u * mag; rounding errors of random sign grow like sqrt(K), and kAccUlps leaves a
//            margin over the largest ratio seen (see kAccUlps). Rounding either input to half
//            (2^-9 relative for bf16) would exceed this by orders of magnitude.
//   half C:  the fp32 bound plus 0.5 ulp of the half type at the result: the one rounding. A
//            second rounding (say per K tile) can cost up to another 0.5 ulp and fails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/gemm_mixed.h"
#include "kernels/cpu/ops.h"
#include "src/core/error.h"
#include "src/core/half.h"

namespace zt {
namespace {

using cpu::detail::GemmPath;
using cpu::detail::GemmTiles;

// The largest |err| / (u sqrt(K+2) mag) measured over this file's fp32-result cases was 0.98
// (sgemm, 517x515x24); 4 leaves a margin of 4 and still fails for a half-precision rounding of any
// input or partial sum (2^-9 relative and more).
constexpr double kAccUlps = 4.0;
constexpr double kU32 = 0x1p-24;

// A matrix stored in one dtype, and the exact values of its (rounded) elements.
struct Stored {
  DType type;
  std::vector<unsigned char> bytes;
  std::vector<double> value;

  Stored(DType t, size_t n, uint32_t seed) : type(t), bytes(n * dtype_size(t)), value(n) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    // Every 17th value tiny: fp16 subnormals (and their conversion) are exercised too.
    for (size_t i = 0; i < n; ++i) set(i, i % 17 == 5 ? d(g) * 0x1p-16f : d(g));
  }
  void set(size_t i, float x) {
    if (type == DType::F32) {
      std::memcpy(bytes.data() + 4 * i, &x, 4);
      value[i] = x;
    } else if (type == DType::BF16) {
      const bf16 h = to_bf16(x);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
      value[i] = to_float(h);
    } else {
      const fp16 h = to_fp16(x);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
      value[i] = to_float(h);
    }
  }
  // Reads element i back from the bytes (after the kernel wrote them).
  double get(size_t i) const {
    if (type == DType::F32) {
      float x;
      std::memcpy(&x, bytes.data() + 4 * i, 4);
      return x;
    }
    uint16_t u;
    std::memcpy(&u, bytes.data() + 2 * i, 2);
    return type == DType::BF16 ? double(to_float(bf16{u})) : double(to_float(fp16{u}));
  }
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
};

// One ulp of `t` at magnitude x (fp16: its subnormal spacing below 2^-14).
double ulp(DType t, double x) {
  if (t == DType::F32) return 0;
  const int p = t == DType::BF16 ? 7 : 10;
  int e = x > 0 ? std::ilogb(x) : -1000;
  if (t == DType::F16) e = std::max(e, -14);
  if (t == DType::BF16) e = std::max(e, -126);
  return std::ldexp(1.0, e - p);
}

struct Gemm {
  bool ta = false, tb = false;
  int M = 0, N = 0, K = 0;
  float alpha = 1, beta = 0;
  DType ab = DType::BF16, c = DType::F32;
  int lda_pad = 0, ldb_pad = 0, ldc_pad = 0;

  int lda() const { return (ta ? M : K) + lda_pad; }
  int ldb() const { return (tb ? K : N) + ldb_pad; }
  int ldc() const { return N + ldc_pad; }
  size_t a_size() const { return size_t(ta ? K : M) * lda(); }
  size_t b_size() const { return size_t(tb ? N : K) * ldb(); }
  size_t c_size() const { return size_t(M) * ldc(); }
  std::string str() const {
    return "ta " + std::to_string(ta) + " tb " + std::to_string(tb) + " " + std::to_string(M) +
           "x" + std::to_string(N) + "x" + std::to_string(K) + " alpha " + std::to_string(alpha) +
           " beta " + std::to_string(beta) + " " + std::string(dtype_name(ab)) + "->" +
           std::string(dtype_name(c));
  }
};

// Runs g on `path` with fresh random operands and checks every element of C (and that the
// padding columns of C are untouched).
::testing::AssertionResult check(const Gemm& g, GemmPath path, const GemmTiles& tiles,
                                 uint32_t seed) {
  const Stored A(g.ab, g.a_size(), seed), B(g.ab, g.b_size(), seed + 1);
  Stored C(g.c, g.c_size(), seed + 2);
  const Stored C0 = C;
  cpu::detail::gemm_mixed(path, g.ta, g.tb, g.M, g.N, g.K, g.alpha, A.data(), g.lda(), B.data(),
                          g.ldb(), g.beta, C.data(), g.ldc(), g.ab, g.c, tiles);
  const double sqrt_k = std::sqrt(double(g.K) + 2);
  size_t bad = 0;
  std::string first;
  for (int i = 0; i < g.M; ++i)
    for (int j = 0; j < g.ldc(); ++j) {
      const size_t ci = size_t(i) * g.ldc() + j;
      if (j >= g.N) {
        if (std::memcmp(&C.bytes[ci * dtype_size(g.c)], &C0.bytes[ci * dtype_size(g.c)],
                        dtype_size(g.c)) != 0 &&
            bad++ == 0)
          first = "padding column " + std::to_string(j) + " of row " + std::to_string(i) +
                  " was written";
        continue;
      }
      double s = 0, mag = 0;
      for (int k = 0; k < g.K; ++k) {
        const double a = A.value[g.ta ? size_t(k) * g.lda() + i : size_t(i) * g.lda() + k];
        const double b = B.value[g.tb ? size_t(j) * g.ldb() + k : size_t(k) * g.ldb() + j];
        s += a * b;
        mag += std::fabs(a * b);
      }
      const double c0 = g.beta == 0 ? 0.0 : C0.value[ci];  // beta = 0 never reads C
      const double want = double(g.alpha) * s + double(g.beta) * c0;
      mag = std::fabs(double(g.alpha)) * mag + std::fabs(double(g.beta) * c0);
      const double got = C.get(ci);
      const double acc = kAccUlps * kU32 * sqrt_k * mag;
      const double tol = acc + 0.5 * ulp(g.c, std::max(std::fabs(want), std::fabs(got)));
      if (!(std::fabs(got - want) <= tol) && bad++ == 0)
        first = "C[" + std::to_string(i) + "," + std::to_string(j) + "] = " + std::to_string(got) +
                ", want " + std::to_string(want) + " (tolerance " + std::to_string(tol) + ")";
    }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << g.str() << ": " << bad << " bad elements; first " << first;
}

std::vector<GemmPath> paths_for(DType ab) {
  std::vector<GemmPath> p{GemmPath::Auto, GemmPath::Fallback};
  if (ab == DType::BF16 && cpu::detail::onednn_bf16_available()) p.push_back(GemmPath::Onednn);
  if (ab == DType::F32 && cpu::detail::onednn_fp32_preferred()) p.push_back(GemmPath::Onednn);
  return p;
}

const char* path_name(GemmPath p) {
  return p == GemmPath::Auto ? "auto" : p == GemmPath::Onednn ? "onednn" : "fallback";
}

struct Types {
  DType ab, c;
};
const Types kTypes[] = {{DType::F32, DType::F32},
                        {DType::BF16, DType::F32},
                        {DType::BF16, DType::BF16},
                        {DType::F16, DType::F32},
                        {DType::F16, DType::F16}};

// oneDNN's ISA detection agrees with the kernel's: where the CPU lists AVX512-BF16 (or AMX-BF16)
// the oneDNN path must be taken, else every bf16 GEMM silently runs the slower fallback.
TEST(KernelsGemmMixed, OnednnAvailableWhereTheCpuHasBf16) {
  if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA"))
    GTEST_SKIP() << "oneDNN's ISA is capped by the environment";
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) {
      flags = line + " ";
      break;
    }
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags line";
  const bool has = flags.find(" avx512_bf16 ") != std::string::npos ||
                   flags.find(" amx_bf16 ") != std::string::npos;
  EXPECT_EQ(cpu::detail::onednn_bf16_available(), has);
  std::cout << "oneDNN bf16 path " << (has ? "available: tested below" : "not available here")
            << "\n";
}

// fp32 goes to oneDNN under Auto only when large, dense and outside a parallel region (on a CPU
// with AVX-512): a new shape that qualifies adds a primitive to the cache, a padded (strided), a
// small one or one inside an OpenMP loop does not, and each result is right.
TEST(KernelsGemmMixed, AutoTakesOnednnForLargeDenseFp32) {
  if (!cpu::detail::onednn_fp32_preferred()) GTEST_SKIP() << "no AVX-512: fp32 stays on sgemm";
  Gemm g;
  g.M = 257, g.N = 259, g.K = 263, g.ab = DType::F32, g.c = DType::F32, g.beta = 1.0f;
  ASSERT_GE(double(g.M) * g.N * g.K, cpu::detail::kOnednnFp32MinMacs);
  const auto added = [](const Gemm& x, bool in_loop) {
    const size_t before = cpu::detail::onednn_cache_size();
    bool ok = true;
    if (in_loop) {
#pragma omp parallel num_threads(2)
      {
#pragma omp single
        ok = static_cast<bool>(check(x, GemmPath::Auto, cpu::detail::kDefaultTiles, 3));
      }
    } else {
      ok = static_cast<bool>(check(x, GemmPath::Auto, cpu::detail::kDefaultTiles, 3));
    }
    EXPECT_TRUE(ok) << x.str();
    return cpu::detail::onednn_cache_size() - before;
  };
  EXPECT_EQ(added(g, false), 1u);
  Gemm t = g;  // every transpose, and beta 0
  t.ta = true, t.tb = true, t.beta = 0.0f;
  EXPECT_EQ(added(t, false), 1u);
  Gemm strided = g;
  strided.N = 261, strided.ldb_pad = 3;
  EXPECT_EQ(added(strided, false), 0u);
  Gemm small = g;
  small.M = 64, small.N = 64, small.K = 64;
  EXPECT_EQ(added(small, false), 0u);
  Gemm nested = g;
  nested.K = 265;
  EXPECT_EQ(added(nested, true), 0u);
}

// Auto sends bf16 (and only bf16) to oneDNN where it is available: a new bf16 shape adds a
// primitive to the cache, an fp16 one does not (nor a small fp32 one).
TEST(KernelsGemmMixed, AutoTakesOnednnForBf16Only) {
  if (!cpu::detail::onednn_bf16_available()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  for (const auto& t : kTypes) {
    Gemm g;
    g.M = 41, g.N = 43, g.K = 47, g.ab = t.ab, g.c = t.c;
    const size_t before = cpu::detail::onednn_cache_size();
    EXPECT_TRUE(check(g, GemmPath::Auto, cpu::detail::kDefaultTiles, 9));
    EXPECT_EQ(cpu::detail::onednn_cache_size(), before + (t.ab == DType::BF16 ? 1 : 0))
        << dtype_name(t.ab) << "->" << dtype_name(t.c);
  }
}

// The interleaved batched product (attention's bf16 path): every transpose x (alpha, beta) x
// result type, odd sizes, each problem of the batch checked against the double reference with
// the tolerance of check(): the batch is `batch` independent products, not one.
TEST(KernelsGemmMixed, OnednnInterleavedBatch) {
  if (!cpu::detail::onednn_bf16_available()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  const int batch = 5, M = 19, N = 23, K = 37;
  const std::pair<float, float> scalars[] = {{1.0f, 0.0f}, {0.5f, -0.75f}};
  uint32_t seed = 500;
  for (DType ct : {DType::F32, DType::BF16})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (const auto& [alpha, beta] : scalars) {
          const Stored A(DType::BF16, size_t(batch) * M * K, seed += 3);
          const Stored B(DType::BF16, size_t(batch) * K * N, seed + 1);
          Stored C(ct, size_t(batch) * M * N, seed + 2);
          const Stored C0 = C;
          cpu::detail::gemm_onednn_interleaved(ta, tb, batch, M, N, K, alpha, A.data(), B.data(),
                                               beta, C.data(), ct);
          // Element (r, c) of problem p of an R x Cn matrix: [R][batch][Cn], or [Cn][batch][R]
          // stored transposed.
          const auto at = [&](bool t, int r, int c, int p, int R, int Cn) {
            return t ? (size_t(c) * batch + p) * R + r : (size_t(r) * batch + p) * Cn + c;
          };
          int bad = 0;
          for (int p = 0; p < batch; ++p)
            for (int i = 0; i < M; ++i)
              for (int j = 0; j < N; ++j) {
                double sum = 0, mag = 0;
                for (int k = 0; k < K; ++k) {
                  const double a = A.value[at(ta, i, k, p, M, K)];
                  const double b = B.value[at(tb, k, j, p, K, N)];
                  sum += a * b;
                  mag += std::fabs(a * b);
                }
                const size_t ci = at(false, i, j, p, M, N);
                const double c0 = beta == 0 ? 0.0 : C0.value[ci];
                const double want = double(alpha) * sum + double(beta) * c0;
                mag = std::fabs(double(alpha)) * mag + std::fabs(double(beta) * c0);
                const double got = C.get(ci);
                const double tol = kAccUlps * kU32 * std::sqrt(K + 2.0) * mag +
                                   0.5 * ulp(ct, std::max(std::fabs(want), std::fabs(got)));
                if (!(std::fabs(got - want) <= tol)) ++bad;
              }
          EXPECT_EQ(bad, 0) << "ta " << ta << " tb " << tb << " alpha " << alpha << " beta " << beta
                            << " -> " << dtype_name(ct);
        }
}

// Every transpose x type pair x (alpha, beta) x path, with odd sizes, padded leading dimensions
// and small fallback tiles (3 tiles along each of M, N and K, the last one partial).
TEST(KernelsGemmMixed, AllTransposesTypesBetasAndPaths) {
  const GemmTiles tiles{8, 8, 16};
  const std::pair<float, float> scalars[] = {
      {1.0f, 0.0f}, {1.0f, 1.0f}, {0.5f, -0.75f}, {-2.0f, 0.0f}};
  uint32_t seed = 100;
  for (const auto& t : kTypes)
    for (GemmPath path : paths_for(t.ab))
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (const auto& [alpha, beta] : scalars) {
            Gemm g;
            g.ta = ta, g.tb = tb, g.M = 19, g.N = 23, g.K = 37, g.alpha = alpha, g.beta = beta;
            g.ab = t.ab, g.c = t.c, g.lda_pad = 3, g.ldb_pad = 5, g.ldc_pad = 2;
            EXPECT_TRUE(check(g, path, tiles, seed += 3)) << path_name(path);
          }
}

// The default tiles: K over two tile boundaries (C accumulated across K tiles, a half C rounded
// once), and M, N each over one.
TEST(KernelsGemmMixed, DefaultTilesLongKAndWideC) {
  for (const auto& t : kTypes)
    for (GemmPath path : paths_for(t.ab))
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
          Gemm g;
          g.ta = ta, g.tb = tb, g.M = 33, g.N = 29, g.K = 1100, g.beta = 1.0f;
          g.ab = t.ab, g.c = t.c, g.lda_pad = 1, g.ldb_pad = 7, g.ldc_pad = 3;
          EXPECT_TRUE(check(g, path, cpu::detail::kDefaultTiles, 7 + ta + 2 * tb))
              << path_name(path);
          if (ta != tb) continue;  // the wide case is costly for the reference (under ASan)
          g.M = 517, g.N = 515, g.K = 24, g.beta = 0.0f;
          EXPECT_TRUE(check(g, path, cpu::detail::kDefaultTiles, 17 + ta + 2 * tb))
              << path_name(path);
        }
}

// beta = 0 must not read C: NaN there must not reach the result.
TEST(KernelsGemmMixed, BetaZeroIgnoresNanInC) {
  for (const auto& t : kTypes)
    for (GemmPath path : paths_for(t.ab)) {
      const int M = 9, N = 11, K = 13;
      const Stored A(t.ab, size_t(M) * K, 1), B(t.ab, size_t(K) * N, 2);
      Stored C(t.c, size_t(M) * N, 3);
      for (size_t i = 0; i < C.value.size(); ++i) C.set(i, std::numeric_limits<float>::quiet_NaN());
      cpu::detail::gemm_mixed(path, false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f,
                              C.data(), N, t.ab, t.c);
      for (size_t i = 0; i < C.value.size(); ++i)
        ASSERT_TRUE(std::isfinite(C.get(i))) << dtype_name(t.ab) << "->" << dtype_name(t.c) << " "
                                             << path_name(path) << " [" << i << "]";
    }
}

// M or N = 0: nothing is read or written (null operands are fine). K = 0: C = beta * C.
TEST(KernelsGemmMixed, EmptyDimensions) {
  for (const auto& t : kTypes)
    for (GemmPath path : paths_for(t.ab)) {
      SCOPED_TRACE(std::string(dtype_name(t.ab)) + "->" + std::string(dtype_name(t.c)) + " " +
                   path_name(path));
      Stored C(t.c, 6 * 5, 4);
      const Stored C0 = C;
      cpu::detail::gemm_mixed(path, false, false, 0, 5, 7, 1.0f, nullptr, 7, nullptr, 5, 1.0f,
                              C.data(), 5, t.ab, t.c);
      cpu::detail::gemm_mixed(path, false, false, 6, 0, 7, 1.0f, nullptr, 7, nullptr, 1, 1.0f,
                              C.data(), 5, t.ab, t.c);
      EXPECT_EQ(C.bytes, C0.bytes);
      for (float beta : {0.0f, 1.0f, -0.5f}) {
        Stored Ck = C0;
        if (beta == 0.0f) Ck.set(0, std::numeric_limits<float>::quiet_NaN());
        cpu::detail::gemm_mixed(path, false, false, 6, 5, 0, 1.0f, nullptr, 1, nullptr, 5, beta,
                                Ck.data(), 5, t.ab, t.c);
        // beta * c is exact in fp32; then one rounding to C's type (which fp16 subnormals need).
        Stored want = C0;
        for (size_t i = 0; i < want.value.size(); ++i)
          want.set(i, beta == 0.0f ? 0.0f : beta * float(C0.value[i]));
        EXPECT_EQ(Ck.bytes, want.bytes) << "beta " << beta;
      }
    }
}

// Same inputs, same bits: each path is deterministic from call to call (cached primitive or not).
TEST(KernelsGemmMixed, RepeatedCallsAreBitwiseEqual) {
  for (const auto& t : kTypes)
    for (GemmPath path : paths_for(t.ab)) {
      const int M = 64, N = 48, K = 700;
      const Stored A(t.ab, size_t(K) * M, 5), B(t.ab, size_t(N) * K, 6);
      Stored C1(t.c, size_t(M) * N, 7);
      Stored C2 = C1;
      for (Stored* c : {&C1, &C2})
        cpu::detail::gemm_mixed(path, true, true, M, N, K, 1.0f, A.data(), M, B.data(), K, 1.0f,
                                c->data(), N, t.ab, t.c);
      EXPECT_EQ(C1.bytes, C2.bytes)
          << dtype_name(t.ab) << "->" << dtype_name(t.c) << " " << path_name(path);
    }
}

TEST(KernelsGemmMixed, RejectsUnsupportedCalls) {
  float buf[64] = {};
  const auto call = [&](GemmPath p, DType ab, DType c, int lda) {
    cpu::detail::gemm_mixed(p, false, false, 4, 4, 4, 1.0f, buf, lda, buf, 4, 0.0f, buf, 4, ab, c);
  };
  EXPECT_THROW(call(GemmPath::Auto, DType::F32, DType::BF16, 4), Error);  // C: fp32 or ab_type
  EXPECT_THROW(call(GemmPath::Auto, DType::BF16, DType::F16, 4), Error);
  EXPECT_THROW(call(GemmPath::Auto, DType::F16, DType::BF16, 4), Error);
  EXPECT_THROW(call(GemmPath::Auto, DType::BF16, DType::F32, 3), Error);  // lda < K
  EXPECT_THROW(call(GemmPath::Onednn, DType::F16, DType::F32, 4), Error);
  if (!cpu::detail::onednn_fp32_preferred()) {
    EXPECT_THROW(call(GemmPath::Onednn, DType::F32, DType::F32, 4), Error);
  }
  EXPECT_THROW(
      cpu::detail::gemm_mixed(GemmPath::Fallback, false, false, 4, 4, 4, 1.0f, buf, 4, buf, 4, 0.0f,
                              buf, 4, DType::BF16, DType::F32, GemmTiles{1024, 8, 8}),
      Error);  // tiles above the scratch's size
}

// Many threads at once, on more distinct shapes than the primitive cache holds: results stay
// right (per-thread scratch and streams, shared primitives) and the cache stays bounded.
TEST(KernelsGemmMixed, ConcurrentCallsAndBoundedCache) {
  constexpr int kThreads = 4;
  const int shapes_per_thread = int(cpu::detail::kOnednnCacheCapacity) / kThreads + 16;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int s = 0; s < shapes_per_thread && failures[t].empty(); ++s) {
        Gemm g;
        g.ta = s % 2, g.tb = (s / 2) % 2, g.beta = s % 3 == 0 ? 0.0f : 1.0f;
        g.M = 3 + t, g.N = 5 + s, g.K = 17 + (s % 5);  // distinct (M, N) per thread and shape
        g.c = s % 2 ? DType::BF16 : DType::F32;
        for (GemmPath path : paths_for(DType::BF16)) {
          auto r = check(g, path, GemmTiles{8, 8, 8}, 1000 * t + s);
          if (!r) failures[t] = std::string(path_name(path)) + ": " + r.message();
        }
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  if (cpu::detail::onednn_bf16_available()) {
    // Each thread's calls alone exceed a quarter of it, all of them together the whole.
    EXPECT_EQ(cpu::detail::onednn_cache_size(), cpu::detail::kOnednnCacheCapacity);
  }
}

// Called from inside an OpenMP loop (as attention does per head): the inner parallelism of
// oneDNN, the fallback and sgemm collapses to the calling thread, and every call is still right.
TEST(KernelsGemmMixed, InsideAnOpenMpLoop) {
  constexpr int kCalls = 16;
  std::vector<std::string> failures(kCalls);
  for (const auto& t : kTypes)
    for (GemmPath path : paths_for(t.ab)) {
#pragma omp parallel for schedule(dynamic, 1)
      for (int i = 0; i < kCalls; ++i) {
        Gemm g;
        g.ta = i % 2, g.tb = (i / 2) % 2, g.M = 70 + i % 3, g.N = 66, g.K = 600, g.beta = 1.0f;
        g.ab = t.ab, g.c = t.c;
        auto r = check(g, path, cpu::detail::kDefaultTiles, 500 + i);
        if (!r) failures[i] = std::string(path_name(path)) + ": " + r.message();
      }
      for (int i = 0; i < kCalls; ++i) EXPECT_EQ(failures[i], "") << "call " << i;
    }
}

// The Backend's typed gemm is this engine on the references' dtypes.
TEST(KernelsGemmMixed, CpuBackendForwards) {
  Gemm g;
  g.M = 5, g.N = 6, g.K = 7, g.beta = 1.0f, g.ab = DType::F16, g.c = DType::F16;
  const Stored A(g.ab, g.a_size(), 1), B(g.ab, g.b_size(), 2);
  Stored C1(g.c, g.c_size(), 3);
  Stored C2 = C1;
  cpu::detail::gemm_mixed(cpu::detail::GemmPath::Auto, false, false, 5, 6, 7, 1.0f, A.data(), 7,
                          B.data(), 6, 1.0f, C1.data(), 6, g.ab, g.c);
  cpu_backend().gemm(false, false, 5, 6, 7, 1.0f, CRef(A.data(), g.ab), 7, CRef(B.data(), g.ab), 6,
                     1.0f, Ref(C2.data(), g.c), 6);
  EXPECT_EQ(C1.bytes, C2.bytes);
  EXPECT_NE(C1.bytes, Stored(g.c, g.c_size(), 3).bytes);  // it did compute something
}

}  // namespace
}  // namespace zt
