// cpu::Kernels::gemm: validation, the choice of path, and the convert-and-sgemm fallback. The
// oneDNN path is in gemm_onednn.cpp; kernels/cpu/gemm_mixed.h describes both.
#include "kernels/cpu/gemm_mixed.h"

#include <cblas.h>
#include <omp.h>
#if defined(__F16C__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/common/cast.h"
#include "kernels/common/grouped_gemm.h"
#include "kernels/cpu/ops.h"
#include "src/core/error.h"

namespace zt::cpu {
namespace detail {
namespace {

// The calling thread's fallback scratch, allocated once at its constant size: the same bytes
// whatever the matrices, so the memory a step needs does not depend on the model's shapes.
float* fallback_scratch() {
  thread_local std::vector<float> scratch(kFallbackScratchFloats);
  return scratch.data();
}

// dst[r * cols + c] = float(src[r * ld + c]): a rows x cols block of a stored matrix, dense.
template <typename T>
void widen_block(float* dst, const T* src, int64_t ld, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const T* s = src + r * ld;
    float* d = dst + int64_t{r} * cols;
    for (int c = 0; c < cols; ++c) d[c] = to_float(s[c]);
  }
}

#if defined(__F16C__)
// fp16 -> fp32 is exact, so the hardware's conversion gives the same bits as to_float(fp16),
// whose subnormal branch keeps the compiler from vectorising it (fp16 ran ~25% slower than bf16).
template <>
void widen_block(float* dst, const fp16* src, int64_t ld, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const fp16* s = src + r * ld;
    float* d = dst + int64_t{r} * cols;
    int c = 0;
    for (; c + 8 <= cols; c += 8)
      _mm256_storeu_ps(d + c,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + c))));
    for (; c < cols; ++c) d[c] = to_float(s[c]);
  }
}
#endif

void widen_block(float* dst, const void* src, DType t, int64_t ld, int rows, int cols) {
  if (t == DType::BF16)
    widen_block(dst, static_cast<const bf16*>(src), ld, rows, cols);
  else
    widen_block(dst, static_cast<const fp16*>(src), ld, rows, cols);
}

// dst[r * ld + c] = round(src[r * cols + c]): a dense fp32 tile back into a half matrix.
template <typename T>
void narrow_block(T* dst, int64_t ld, const float* src, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    T* d = dst + r * ld;
    const float* s = src + int64_t{r} * cols;
    for (int c = 0; c < cols; ++c) d[c] = from_float<T>(s[c]);
  }
}

void narrow_block(void* dst, DType t, int64_t ld, const float* src, int rows, int cols) {
  if (t == DType::BF16)
    narrow_block(static_cast<bf16*>(dst), ld, src, rows, cols);
  else
    narrow_block(static_cast<fp16*>(dst), ld, src, rows, cols);
}

const void* offset(const void* p, DType t, int64_t elems) {
  return static_cast<const char*>(p) + elems * static_cast<int64_t>(dtype_size(t));
}
void* offset(void* p, DType t, int64_t elems) {
  return static_cast<char*>(p) + elems * static_cast<int64_t>(dtype_size(t));
}

// K = 0: the product is empty, C = beta * C. BLAS would do the same, but its argument checks
// reject lda = 0, and a half C needs its own rounding anyway. beta = 0 writes zeros without
// reading C (as sgemm does), so garbage or NaN in C does not survive.
void scale_c(int M, int N, float beta, void* C, int ldc, DType c_type) {
  for (int i = 0; i < M; ++i) {
    if (c_type == DType::F32) {
      float* row = static_cast<float*>(C) + int64_t{i} * ldc;
      for (int j = 0; j < N; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    } else if (c_type == DType::BF16) {
      bf16* row = static_cast<bf16*>(C) + int64_t{i} * ldc;
      for (int j = 0; j < N; ++j) row[j] = to_bf16(beta == 0.0f ? 0.0f : beta * to_float(row[j]));
    } else {
      fp16* row = static_cast<fp16*>(C) + int64_t{i} * ldc;
      for (int j = 0; j < N; ++j) row[j] = to_fp16(beta == 0.0f ? 0.0f : beta * to_float(row[j]));
    }
  }
}

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

// C tiles no narrower than this are split further to give every thread work: below it sgemm's
// rate drops and the A and B tiles are converted more often.
constexpr int kMinSplitTile = 64;

// One C tile [m0, m0+mt) x [n0, n0+nt), accumulated in fp32 over K tiles by the calling thread
// in its own scratch. op(A)'s tile is widened from the stored block in its stored orientation
// (rows of K when transposed), so each conversion reads contiguous rows and sgemm takes the
// transpose flag.
void fallback_tile(bool ta, bool tb, int m0, int mt, int n0, int nt, int K, int tk, float alpha,
                   const void* A, int lda, const void* B, int ldb, float beta, void* C, int ldc,
                   DType ab, DType ct) {
  float* const a_tile = fallback_scratch();
  float* const b_tile = a_tile + size_t{kDefaultTiles.m} * kDefaultTiles.k;
  float* const c_tile = b_tile + size_t{kDefaultTiles.k} * kDefaultTiles.n;
  const auto op = [](bool t) { return t ? CblasTrans : CblasNoTrans; };
  // An fp32 C is its own accumulator; a half C is widened into c_tile (only when beta reads it)
  // and rounded back once at the end, so it sees one rounding like the oneDNN path.
  float* acc = c_tile;
  int ld_acc = nt;
  void* const c_block = offset(C, ct, int64_t{m0} * ldc + n0);
  if (ct == DType::F32) {
    acc = static_cast<float*>(c_block);
    ld_acc = ldc;
  } else if (beta != 0.0f) {
    widen_block(c_tile, c_block, ct, ldc, mt, nt);
  }
  for (int k0 = 0; k0 < K; k0 += tk) {
    const int kt = std::min(tk, K - k0);
    // Stored block of A: op(A)[m0.., k0..] is A[k0.., m0..] when transposed.
    const int a_rows = ta ? kt : mt, a_cols = ta ? mt : kt;
    widen_block(a_tile, offset(A, ab, ta ? int64_t{k0} * lda + m0 : int64_t{m0} * lda + k0), ab,
                lda, a_rows, a_cols);
    const int b_rows = tb ? nt : kt, b_cols = tb ? kt : nt;
    widen_block(b_tile, offset(B, ab, tb ? int64_t{n0} * ldb + k0 : int64_t{k0} * ldb + n0), ab,
                ldb, b_rows, b_cols);
    cblas_sgemm(CblasRowMajor, op(ta), op(tb), mt, nt, kt, alpha, a_tile, a_cols, b_tile, b_cols,
                k0 == 0 ? beta : 1.0f, acc, ld_acc);
  }
  if (ct != DType::F32) narrow_block(c_block, ct, ldc, c_tile, mt, nt);
}

// Half operands. The threads share out C tiles in one parallel region, each converting its own
// operand tiles and calling sgemm, which runs single-threaded inside the region (OpenBLAS built
// on OpenMP does so when omp_in_parallel()). One region per GEMM, not three per tile: with the
// cores oversubscribed (several ranks on one machine) every region's barrier waits for a
// descheduled thread, and per-tile regions measured 5-10x slower than sgemm on 2 threads.
// Each tile is one thread's work from start to end, so which thread takes it does not change a
// bit: the same call gives the same result every time. The tiling follows the thread count, and
// sgemm's rounding follows its blocking, so 1 and 2 threads may differ in the last bit (as
// OpenBLAS sgemm itself does on fp32 operands).
void fallback(bool ta, bool tb, int M, int N, int K, float alpha, const void* A, int lda,
              const void* B, int ldb, float beta, void* C, int ldc, DType ab, DType ct,
              const GemmTiles& tiles) {
  // Even tiles of at most tiles.m x tiles.n; split further (the longer side first) until every
  // thread has about two, for balance, or the tiles reach kMinSplitTile.
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  int mtiles = ceil_div(M, tiles.m), ntiles = ceil_div(N, tiles.n);
  while (int64_t{mtiles} * ntiles < 2 * threads) {
    const bool m_splits = ceil_div(M, mtiles + 1) >= kMinSplitTile;
    const bool n_splits = ceil_div(N, ntiles + 1) >= kMinSplitTile;
    if (m_splits && (!n_splits || ceil_div(M, mtiles) >= ceil_div(N, ntiles)))
      ++mtiles;
    else if (n_splits)
      ++ntiles;
    else
      break;
  }
  const int tm = ceil_div(M, mtiles), tn = ceil_div(N, ntiles);
  mtiles = ceil_div(M, tm);
  ntiles = ceil_div(N, tn);
  const int count = mtiles * ntiles;
  // dynamic: a thread that was descheduled does fewer tiles instead of holding the others up.
#pragma omp parallel for schedule(dynamic, 1) if (count > 1)
  for (int t = 0; t < count; ++t) {
    const int m0 = (t / ntiles) * tm, n0 = (t % ntiles) * tn;
    fallback_tile(ta, tb, m0, std::min(tm, M - m0), n0, std::min(tn, N - n0), K, tiles.k, alpha, A,
                  lda, B, ldb, beta, C, ldc, ab, ct);
  }
}

}  // namespace

bool onednn_fp32_takes(bool ta, bool tb, int M, int N, int K, int lda, int ldb, int ldc) {
  return onednn_fp32_preferred() && !omp_in_parallel() && lda == (ta ? M : K) &&
         ldb == (tb ? K : N) && ldc == N && double(M) * N * K >= kOnednnFp32MinMacs;
}

void gemm_mixed(GemmPath path, bool ta, bool tb, int M, int N, int K, float alpha, const void* A,
                int lda, const void* B, int ldb, float beta, void* C, int ldc, DType ab_type,
                DType c_type, const GemmTiles& tiles) {
  ZT_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm_mixed: negative size {}x{}x{}", M, N, K);
  ZT_CHECK(c_type == DType::F32 || c_type == ab_type,
           "gemm_mixed: {} operands with a {} result (C must be fp32 or the operands' type)",
           dtype_name(ab_type), dtype_name(c_type));
  // BLAS's own checks print to stderr and return without computing; refuse here instead.
  ZT_CHECK(
      lda >= std::max(1, ta ? M : K) && ldb >= std::max(1, tb ? K : N) && ldc >= std::max(1, N),
      "gemm_mixed: leading dimensions lda {} ldb {} ldc {} too small for {}x{}x{} "
      "(trans_a {}, trans_b {})",
      lda, ldb, ldc, M, N, K, ta, tb);
  ZT_CHECK(tiles.m > 0 && tiles.n > 0 && tiles.k > 0 && tiles.m <= kDefaultTiles.m &&
               tiles.n <= kDefaultTiles.n && tiles.k <= kDefaultTiles.k,
           "gemm_mixed: tiles {}x{}x{} outside (0, default]", tiles.m, tiles.n, tiles.k);
  if (path == GemmPath::Onednn) {
    ZT_CHECK(ab_type == DType::BF16 || ab_type == DType::F32,
             "gemm_mixed: the oneDNN path takes bf16 or fp32 operands, not {}",
             dtype_name(ab_type));
    ZT_CHECK(ab_type == DType::F32 || onednn_bf16_available(),
             "gemm_mixed: the oneDNN path needs a CPU with AVX512-BF16 or AMX for bf16");
    ZT_CHECK(ab_type == DType::BF16 || onednn_fp32_preferred(),
             "gemm_mixed: the oneDNN path needs a CPU with AVX-512 for fp32");
  }
  if (M == 0 || N == 0) return;
  if (K == 0) return scale_c(M, N, beta, C, ldc, c_type);
  const bool use_onednn =
      path == GemmPath::Onednn ||
      (path == GemmPath::Auto &&
       (ab_type == DType::F32 ? onednn_fp32_takes(ta, tb, M, N, K, lda, ldb, ldc)
                              : ab_type == DType::BF16 && onednn_bf16_available()));
  if (use_onednn)
    return gemm_onednn(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ab_type, c_type);
  if (ab_type == DType::F32)
    return cpu::gemm(ta, tb, M, N, K, alpha, static_cast<const float*>(A), lda,
                     static_cast<const float*>(B), ldb, beta, static_cast<float*>(C), ldc);
  fallback(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ab_type, c_type, tiles);
}

}  // namespace detail

void Kernels::gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, CRef A, int lda,
                   CRef B, int ldb, float beta, Ref C, int ldc, Exec) {
  ZT_CHECK(A.t == B.t, "gemm: operands in {} and {}", dtype_name(A.t), dtype_name(B.t));
  detail::gemm_mixed(detail::GemmPath::Auto, trans_a, trans_b, M, N, K, alpha, A.p, lda, B.p, ldb,
                     beta, C.p, ldc, A.t, C.t);
}

namespace {

// Calls fn(first, count) over [0, m) in blocks of 4096, 2048, ..., 16 rows (the binary digits of
// m from 16 up, each 4096 repeated) and one of the 15 or fewer rows left.
template <typename F>
void for_each_row_block(int m, F&& fn) {
  constexpr int kLargest = 4096, kSmallest = 16;
  int at = 0;
  for (; m - at >= kLargest; at += kLargest) fn(at, kLargest);
  for (int b = kLargest / 2; b >= kSmallest; b /= 2)
    if (m - at >= b) {
      fn(at, b);
      at += b;
    }
  if (at < m) fn(at, m - at);
}

// The experts' products, each expert's rows in blocks of a few fixed counts: oneDNN compiles a
// primitive per GEMM shape, and an expert's row count changes with every routing, so whole
// experts would compile a primitive in nearly every call (the cache of recent shapes never
// hits). In blocks every expert shares at most two dozen shapes per weight.
struct ExpertGemm {
  using Exec = Kernels::Exec;
  // The expert's rows are M (forward, input gradient: op(A) = A) or K (the weight gradient:
  // op(A) = Aᵀ, A and B row blocks of the same rows, summed into C).
  static void gemm(bool ta, bool tb, int M, int N, int K, float alpha, CRef A, int lda, CRef B,
                   int ldb, float beta, Ref C, int ldc, Exec exec) {
    if (!ta) {
      for_each_row_block(M, [&](int r, int n) {
        Kernels::gemm(false, tb, n, N, K, alpha, A + int64_t{r} * lda, lda, B, ldb, beta,
                      C + int64_t{r} * ldc, ldc, exec);
      });
      return;
    }
    ZT_CHECK(!tb, "expert GEMM: the weight gradient's B is not transposed");
    bool first = true;
    for_each_row_block(K, [&](int r, int n) {
      Kernels::gemm(true, false, M, N, n, alpha, A + int64_t{r} * lda, lda, B + int64_t{r} * ldb,
                    ldb, first ? beta : 1.0f, C, ldc, exec);
      first = false;
    });
  }
};

}  // namespace

void Kernels::grouped_gemm(bool trans_b, const int64_t* rows, int E, int N, int K, float alpha,
                           CRef A, CRef B, float beta, Ref C, Exec exec) {
  grouped_gemm_by_expert<ExpertGemm>(trans_b, rows, E, N, K, alpha, A, B, beta, C, exec);
}

void Kernels::grouped_gemm_wgrad(const int64_t* rows, int E, int N, int K, float alpha, CRef dC,
                                 CRef A, float beta, Ref dB, Exec exec) {
  grouped_gemm_wgrad_by_expert<ExpertGemm>(
      rows, E, N, K, alpha, dC, A, beta, dB, exec,
      [](Ref r, int64_t n) { std::memset(r.p, 0, r.bytes(n)); });
}

}  // namespace zt::cpu
