#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstdint>
#include <memory>

#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

// Column-major rows x cols with leading dimension ld.
std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDestroy> make_layout(cudaDataType_t type, int rows,
                                                                     int cols, int ld) {
  cublasLtMatrixLayout_t l = nullptr;
  ZT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows),
                                             static_cast<uint64_t>(cols), ld));
  return std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDestroy>(l);
}

// The largest power of two (up to 256) dividing the address: cuBLASLt's heuristic assumes
// 256-byte aligned pointers unless told otherwise, and views into larger buffers are not.
uint32_t alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

void set_pref_u32(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                  uint32_t v) {
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &v, sizeof v));
}

template <typename V>
void set_desc(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attr, const V& v) {
  ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, attr, &v, sizeof v));
}

bool has_aux(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
         e == CUBLASLT_EPILOGUE_DGELU;
}

// Descriptors, layouts, preference and the heuristic's first algorithm for `g` (the pointer
// attributes are set per call). found = false when cuBLASLt has none.
LtPlan build_plan(const LtMatmul& g, cublasComputeType_t compute) {
  LtPlan plan;
  cublasLtMatmulDesc_t op = nullptr;
  ZT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, compute, CUDA_R_32F));
  plan.op.reset(op);
  // Swapped operands (see gemm_lt.h): the first is row-major B, the second row-major A.
  set_desc(op, CUBLASLT_MATMUL_DESC_TRANSA, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc(op, CUBLASLT_MATMUL_DESC_TRANSB, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N);
  if (g.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE, g.epilogue);
    // The heuristic reads the pointers' values for their alignment: set them before asking.
    set_desc(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);
  }
  if (has_aux(g.epilogue)) {
    set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux);
    set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, g.aux_ld);
  }
  plan.a =
      g.trans_b ? make_layout(g.ab_type, g.K, g.N, g.ldb) : make_layout(g.ab_type, g.N, g.K, g.ldb);
  plan.b =
      g.trans_a ? make_layout(g.ab_type, g.M, g.K, g.lda) : make_layout(g.ab_type, g.K, g.M, g.lda);
  plan.c = make_layout(g.c_type, g.N, g.M, g.ldc);

  cublasLtMatmulPreference_t pref = nullptr;
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  plan.pref.reset(pref);
  const size_t ws_bytes = kLtWorkspaceBytes;
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  set_pref_u32(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment(g.B));
  set_pref_u32(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment(g.A));
  set_pref_u32(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment(g.C));
  set_pref_u32(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment(g.C));

  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(lt_handle(), op, plan.a.get(), plan.b.get(), plan.c.get(),
                                     plan.c.get(), pref, 1, &heur, &found);
  // With a fused epilogue any refusal (NOT_SUPPORTED, and INVALID_VALUE, ARCH_MISMATCH and the
  // like from cuBLASLt versions that reject a combination in other words) is "no algorithm": the
  // caller runs the unfused ops. A plain GEMM has no fallback, so its status is an error.
  if (g.epilogue == CUBLASLT_EPILOGUE_DEFAULT && st != CUBLAS_STATUS_NOT_SUPPORTED)
    ZT_CUBLAS_CHECK(st);
  plan.found = st == CUBLAS_STATUS_SUCCESS && found > 0;
  if (plan.found) plan.algo = heur.algo;
  return plan;
}

// beta * C when there is nothing to multiply (K = 0); cuBLASLt rejects K = 0.
template <typename T>
void scale_matrix(T* C, int M, int N, int ldc, float beta, cudaStream_t stream) {
  for_each(int64_t{M} * N, stream, [=] __device__(int64_t i) {
    T& c = C[(i / N) * ldc + i % N];
    c = from_float<T>(beta == 0.0f ? 0.0f : beta * to_float(c));
  });
}

}  // namespace

bool lt_matmul_try(const LtMatmul& g, cudaStream_t stream) {
  ZT_CU_CHECK(g.M >= 0 && g.N >= 0 && g.K >= 0,
              cat("gemm: negative size ", g.M, "x", g.N, "x", g.K));
  if (g.M == 0 || g.N == 0) return true;
  if (g.K == 0) {
    ZT_CU_CHECK(g.epilogue == CUBLASLT_EPILOGUE_DEFAULT,
                std::string("gemm: K = 0 with an epilogue"));
    if (g.c_type == CUDA_R_32F)
      scale_matrix(static_cast<float*>(g.C), g.M, g.N, g.ldc, g.beta, stream);
    else if (g.c_type == CUDA_R_16BF)
      scale_matrix(static_cast<bf16*>(g.C), g.M, g.N, g.ldc, g.beta, stream);
    else
      scale_matrix(static_cast<fp16*>(g.C), g.M, g.N, g.ldc, g.beta, stream);
    return true;
  }
  // fp32 operands on TF32 tensor cores when set_tf32(true) (Megatron's default on sm_80+).
  const cublasComputeType_t compute =
      g.compute == CUBLAS_COMPUTE_32F && g.ab_type == CUDA_R_32F && tf32()
          ? CUBLAS_COMPUTE_32F_FAST_TF32
          : g.compute;
  const bool aux = has_aux(g.epilogue);
  // The plan (descriptors and the heuristic's algorithm, which costs far more than the
  // descriptors) is a function of this key only, so the same problem gets the same algorithm
  // every time (kernels/cuda/context.h).
  const LtPlanKey key{
      g.M,
      g.N,
      g.K,
      g.trans_a,
      g.trans_b,
      g.lda,
      g.ldb,
      g.ldc,
      static_cast<int64_t>(g.ab_type),
      static_cast<int64_t>(g.c_type),
      static_cast<int64_t>(compute),
      static_cast<int64_t>(g.epilogue),
      aux ? g.aux_ld : 0,
      alignment(g.A),
      alignment(g.B),
      alignment(g.C),
      (g.bias != nullptr ? alignment(g.bias) : 0) * 512 + (aux ? alignment(g.aux) : 0)};
  LtPlan* plan = lt_plan_find(key);
  if (plan == nullptr) plan = &lt_plan_insert(key, build_plan(g, compute));
  if (!plan->found) return false;
  if (g.epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    set_desc(plan->op.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);
  if (aux) set_desc(plan->op.get(), CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux);
  ZT_CUBLAS_CHECK(cublasLtMatmul(lt_handle(), plan->op.get(), &g.alpha, g.B, plan->a.get(), g.A,
                                 plan->b.get(), &g.beta, g.C, plan->c.get(), g.C, plan->c.get(),
                                 &plan->algo, lt_workspace(stream), kLtWorkspaceBytes, stream));
  return true;
}

void lt_matmul(const LtMatmul& g, cudaStream_t stream) {
  ZT_CU_CHECK(lt_matmul_try(g, stream),
              cat("gemm: cuBLASLt has no algorithm for ", g.M, "x", g.N, "x", g.K, " (trans ",
                  g.trans_a, " ", g.trans_b, ", epilogue ", static_cast<int>(g.epilogue), ")"));
}

void gemm_strided_batched(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                          const float* A, int lda, int64_t stride_a, const float* B, int ldb,
                          int64_t stride_b, float beta, float* C, int ldc, int64_t stride_c,
                          int batch, cudaStream_t stream) {
  if (M == 0 || N == 0 || batch == 0) return;
  ZT_CUBLAS_CHECK(cublasSgemmStridedBatched(
      blas_handle(stream), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      N, M, K, &alpha, B, ldb, stride_b, A, lda, stride_a, &beta, C, ldc, stride_c, batch));
}

void gemm_strided_batched_ex(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                             const void* A, int lda, int64_t stride_a, const void* B, int ldb,
                             int64_t stride_b, float beta, void* C, int ldc, int64_t stride_c,
                             int batch, DType ab, DType c, cudaStream_t stream) {
  if (M == 0 || N == 0 || batch == 0) return;
  ZT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      blas_handle(stream), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      N, M, K, &alpha, B, cuda_type(ab), ldb, stride_b, A, cuda_type(ab), lda, stride_a, &beta, C,
      cuda_type(c), ldc, stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace detail

using detail::cat;
using detail::cuda_type;

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc, cudaStream_t stream) {
  detail::lt_matmul(detail::plain_matmul(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C,
                                         ldc, DType::F32, DType::F32),
                    stream);
}

void gemm_mixed(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A,
                int lda, const void* B, int ldb, float beta, void* C, int ldc, DType ab_type,
                DType c_type, cudaStream_t stream) {
  // cuBLASLt's supported combinations with fp32 compute: C is fp32 or the operands' type.
  ZT_CU_CHECK(ab_type != DType::F32,
              std::string("gemm_mixed: operands must be bf16 or fp16, not fp32"));
  ZT_CU_CHECK(
      c_type == DType::F32 || c_type == ab_type,
      cat("gemm_mixed: ", dtype_name(ab_type), " operands with a ", dtype_name(c_type), " result"));
  detail::lt_matmul(detail::plain_matmul(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C,
                                         ldc, ab_type, c_type),
                    stream);
}

}  // namespace zt::cuda
