#include <cublasLt.h>
#include <cublas_v2.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>

#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

struct DescDestroy {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { (void)cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* d) const { (void)cublasLtMatrixLayoutDestroy(d); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* d) const {
    (void)cublasLtMatmulPreferenceDestroy(d);
  }
};
using OpDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDestroy>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDestroy>;
using Pref = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, DescDestroy>;

// Column-major rows x cols with leading dimension ld.
Layout make_layout(cudaDataType_t type, int rows, int cols, int ld) {
  cublasLtMatrixLayout_t l = nullptr;
  ZT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows),
                                             static_cast<uint64_t>(cols), ld));
  return Layout(l);
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

using AlgoKey = std::array<int64_t, 16>;
std::map<AlgoKey, cublasLtMatmulAlgo_t>& algo_cache() {
  thread_local std::map<AlgoKey, cublasLtMatmulAlgo_t> cache;
  return cache;
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

void lt_matmul(const LtMatmul& g, cudaStream_t stream) {
  ZT_CU_CHECK(g.M >= 0 && g.N >= 0 && g.K >= 0,
              cat("gemm: negative size ", g.M, "x", g.N, "x", g.K));
  if (g.M == 0 || g.N == 0) return;
  if (g.K == 0) {
    ZT_CU_CHECK(g.epilogue == CUBLASLT_EPILOGUE_DEFAULT,
                std::string("gemm: K = 0 with an epilogue"));
    if (g.c_type == CUDA_R_32F)
      scale_matrix(static_cast<float*>(g.C), g.M, g.N, g.ldc, g.beta, stream);
    else if (g.c_type == CUDA_R_16BF)
      scale_matrix(static_cast<bf16*>(g.C), g.M, g.N, g.ldc, g.beta, stream);
    else
      scale_matrix(static_cast<fp16*>(g.C), g.M, g.N, g.ldc, g.beta, stream);
    return;
  }
  // fp32 operands on TF32 tensor cores when set_tf32(true) (Megatron's default on sm_80+).
  const cublasComputeType_t compute =
      g.compute == CUBLAS_COMPUTE_32F && g.ab_type == CUDA_R_32F && tf32()
          ? CUBLAS_COMPUTE_32F_FAST_TF32
          : g.compute;
  cublasLtMatmulDesc_t op_raw = nullptr;
  ZT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_raw, compute, CUDA_R_32F));
  const OpDesc op(op_raw);
  // Swapped operands (see gemm_lt.h): the first is row-major B, the second row-major A.
  const cublasOperation_t ta = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  ZT_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op_raw, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  ZT_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op_raw, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (g.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_raw, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                   &g.epilogue, sizeof g.epilogue));
    ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_raw, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                   &g.bias, sizeof g.bias));
  }
  const Layout a =
      g.trans_b ? make_layout(g.ab_type, g.K, g.N, g.ldb) : make_layout(g.ab_type, g.N, g.K, g.ldb);
  const Layout b =
      g.trans_a ? make_layout(g.ab_type, g.M, g.K, g.lda) : make_layout(g.ab_type, g.K, g.M, g.lda);
  const Layout c = make_layout(g.c_type, g.N, g.M, g.ldc);

  cublasLtMatmulPreference_t pref_raw = nullptr;
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref_raw));
  const Pref pref(pref_raw);
  const size_t ws_bytes = kLtWorkspaceBytes;
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref_raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  set_pref_u32(pref_raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment(g.B));
  set_pref_u32(pref_raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment(g.A));
  set_pref_u32(pref_raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment(g.C));
  set_pref_u32(pref_raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment(g.C));

  cublasLtHandle_t lt = lt_handle();
  // The heuristic query costs far more than the descriptors; its answer is a function of the
  // problem, so it is cached per thread (the same algorithm for the same problem every time).
  int device = 0;
  ZT_CU_CUDA_CHECK(cudaGetDevice(&device));
  const AlgoKey key{device,
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
                    alignment(g.A),
                    alignment(g.B),
                    alignment(g.C)};
  auto& cache = algo_cache();
  auto it = cache.find(key);
  if (it == cache.end()) {
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    ZT_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, op_raw, a.get(), b.get(), c.get(), c.get(),
                                                   pref_raw, 1, &heur, &found));
    ZT_CU_CHECK(found > 0,
                cat("gemm: cuBLASLt has no algorithm for ", g.M, "x", g.N, "x", g.K, " (trans ",
                    g.trans_a, " ", g.trans_b, ", epilogue ", static_cast<int>(g.epilogue), ")"));
    it = cache.emplace(key, heur.algo).first;
  }
  ZT_CUBLAS_CHECK(cublasLtMatmul(lt, op_raw, &g.alpha, g.B, a.get(), g.A, b.get(), &g.beta, g.C,
                                 c.get(), g.C, c.get(), &it->second, lt_workspace(stream), ws_bytes,
                                 stream));
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
  detail::LtMatmul g;
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
  detail::lt_matmul(g, stream);
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
  detail::LtMatmul g;
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
  g.ab_type = cuda_type(ab_type);
  g.c_type = cuda_type(c_type);
  detail::lt_matmul(g, stream);
}

// The Backend's GEMM: fp32 operands and result on the fp32 path (exact fp32, or TF32 after
// set_tf32), everything else on tensor cores with fp32 accumulation.
void Kernels::gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A,
                   int lda, const void* B, int ldb, float beta, void* C, int ldc, DType ab_type,
                   DType c_type, cudaStream_t stream) {
  if (ab_type == DType::F32 && c_type == DType::F32)
    cuda::gemm(trans_a, trans_b, M, N, K, alpha, static_cast<const float*>(A), lda,
               static_cast<const float*>(B), ldb, beta, static_cast<float*>(C), ldc, stream);
  else
    gemm_mixed(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ab_type, c_type,
               stream);
}

}  // namespace zt::cuda
