#include <cblas.h>

#include "kernels/cpu/ops.h"
#include "src/core/error.h"

namespace zt::cpu {

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  ZT_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm: negative size {}x{}x{}", M, N, K);
  if (M == 0 || N == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace zt::cpu
