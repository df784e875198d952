#pragma once
// Internal GEMM entry points shared by gemm.cu, linear.cu and attention.cu. All take row-major
// operands like the public gemm and hand cuBLAS the column-major transpose: row-major
// C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so the operands swap places.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/core/dtype.h"

namespace zt::cuda::detail {

struct LtMatmul {
  bool trans_a = false, trans_b = false;
  int M = 0, N = 0, K = 0;
  float alpha = 1;
  const void* A = nullptr;
  int lda = 0;
  const void* B = nullptr;
  int ldb = 0;
  float beta = 0;
  void* C = nullptr;  // also D: cuBLASLt writes in place
  int ldc = 0;
  cudaDataType_t ab_type = CUDA_R_32F, c_type = CUDA_R_32F;
  // CUBLAS_COMPUTE_32F is exact fp32 for fp32 operands (no TF32) and fp32 accumulation on
  // tensor cores for bf16/fp16 operands.
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;  // [N] of the row-major result in C's type, for the BIAS epilogues
  // GELU_AUX(_BIAS): receives the GeLU input; DGELU: the GeLU input read. Row-major [M, aux_ld]
  // in C's type (cuBLASLt's default aux type); aux_ld a multiple of 8.
  const void* aux = nullptr;
  int64_t aux_ld = 0;
};

// One cuBLASLt matmul (the heuristic's first algorithm, workspace from context.h), its plan
// cached per problem (kernels/cuda/context.h). lt_matmul_try returns false, enqueuing nothing,
// when cuBLASLt has no algorithm for the problem (an epilogue it does not support for these
// types); lt_matmul throws then.
bool lt_matmul_try(const LtMatmul& g, cudaStream_t stream);
void lt_matmul(const LtMatmul& g, cudaStream_t stream);

inline cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::BF16:
      return CUDA_R_16BF;
    case DType::F16:
      return CUDA_R_16F;
    case DType::F32:
      break;
  }
  return CUDA_R_32F;
}

// The plain problem C = alpha op(A) op(B) + beta C, A and B in `ab`, C in `c`, no epilogue.
inline LtMatmul plain_matmul(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                             const void* A, int lda, const void* B, int ldb, float beta, void* C,
                             int ldc, DType ab, DType c) {
  LtMatmul g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.M = M;
  g.N = N;
  g.K = K;
  g.alpha = alpha;
  g.A = A;
  g.lda = lda;
  g.B = B;
  g.ldb = ldb;
  g.beta = beta;
  g.C = C;
  g.ldc = ldc;
  g.ab_type = cuda_type(ab);
  g.c_type = cuda_type(c);
  return g;
}

// The same on A and B in `ab` and C in `c` (cublasGemmStridedBatchedEx, fp32 accumulation).
void gemm_strided_batched_ex(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                             const void* A, int lda, int64_t stride_a, const void* B, int ldb,
                             int64_t stride_b, float beta, void* C, int ldc, int64_t stride_c,
                             int batch, DType ab, DType c, cudaStream_t stream);

// fp32 strided-batched GEMM through cublasSgemmStridedBatched, row-major like gemm: batch i
// uses A + i*stride_a, B + i*stride_b, C + i*stride_c. Classic cuBLAS accepts any pointer
// alignment, which the per-head views into qkv need.
void gemm_strided_batched(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                          const float* A, int lda, int64_t stride_a, const float* B, int ldb,
                          int64_t stride_b, float beta, float* C, int ldc, int64_t stride_c,
                          int batch, cudaStream_t stream);

}  // namespace zt::cuda::detail
