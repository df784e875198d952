// cuda::Kernels::gemm, the op on typed references (kernels/ops.inc). Host code in a .cpp: the
// references (src/core/typed_ref.h) bring fmt, which nvcc does not compile.
#include "kernels/cuda/ops.h"
#include "src/core/error.h"
#include "src/core/typed_ref.h"

namespace zt::cuda {

// The Backend's GEMM: fp32 operands and result on the fp32 path (exact fp32, or TF32 after
// set_tf32), everything else on tensor cores with fp32 accumulation.
void Kernels::gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, CRef A, int lda,
                   CRef B, int ldb, float beta, Ref C, int ldc, cudaStream_t stream) {
  ZT_CHECK(A.t == B.t, "gemm: operands in {} and {}", dtype_name(A.t), dtype_name(B.t));
  if (A.t == DType::F32 && C.t == DType::F32)
    cuda::gemm(trans_a, trans_b, M, N, K, alpha, static_cast<const float*>(A.p), lda,
               static_cast<const float*>(B.p), ldb, beta, static_cast<float*>(C.p), ldc, stream);
  else
    gemm_mixed(trans_a, trans_b, M, N, K, alpha, A.p, lda, B.p, ldb, beta, C.p, ldc, A.t, C.t,
               stream);
}

}  // namespace zt::cuda
