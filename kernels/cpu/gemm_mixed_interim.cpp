#include <cblas.h>

#include <type_traits>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/core/error.h"

// Interim gemm_mixed until the oneDNN one lands: operands widened to fp32 whole, one sgemm.
namespace zt::cpu {
namespace {

template <typename T>
const float* widen(const void* src, int64_t n, std::vector<float>& buf) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<const float*>(src);
  } else {
    buf.resize(static_cast<size_t>(n));
    const T* s = static_cast<const T*>(src);
    for (int64_t i = 0; i < n; ++i) buf[static_cast<size_t>(i)] = to_float(s[i]);
    return buf.data();
  }
}

}  // namespace

void gemm_mixed(bool ta, bool tb, int M, int N, int K, float alpha, const void* A, int lda,
                const void* B, int ldb, float beta, void* C, int ldc, DType ab, DType ct) {
  ZT_CHECK(ct == DType::F32 || ct == ab, "gemm_mixed: C in {} with operands in {}", dtype_name(ct),
           dtype_name(ab));
  if (M == 0 || N == 0) return;
  thread_local std::vector<float> a, b, c;
  // Elements spanned by a row-major operand of `rows` rows of `cols` with leading dimension ld.
  auto span = [](int64_t rows, int64_t cols, int64_t ld) {
    return rows == 0 ? 0 : (rows - 1) * ld + cols;
  };
  const int64_t an = span(ta ? K : M, ta ? M : K, lda), bn = span(tb ? N : K, tb ? K : N, ldb);
  visit_dtype(ab, [&](auto t) {
    using T = decltype(t);
    const float* af = widen<T>(A, an, a);
    const float* bf = widen<T>(B, bn, b);
    if (ct == DType::F32) {
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M,
                  N, K, alpha, af, lda, bf, ldb, beta, static_cast<float*>(C), ldc);
      return;
    }
    T* cp = static_cast<T*>(C);
    c.resize(static_cast<size_t>(M) * static_cast<size_t>(N));
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        c[static_cast<size_t>(i) * N + j] =
            beta == 0.0f ? 0.0f : to_float(cp[int64_t{i} * ldc + j]);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
                K, alpha, af, lda, bf, ldb, beta, c.data(), N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        cp[int64_t{i} * ldc + j] = from_float<T>(c[static_cast<size_t>(i) * N + j]);
  });
}

}  // namespace zt::cpu
