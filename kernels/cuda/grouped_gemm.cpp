// The grouped GEMM on CUDA: kernels/common/grouped_gemm.h over Kernels::gemm (cuBLASLt) on the
// compute stream. Host code only, so the host compiler builds it.
#include "kernels/common/grouped_gemm.h"

#include <cuda_runtime_api.h>

#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/ops.h"

namespace zt::cuda {

void Kernels::grouped_gemm(bool trans_b, const int64_t* rows, int E, int N, int K, float alpha,
                           CRef A, CRef B, float beta, Ref C, cudaStream_t stream) {
  grouped_gemm_by_expert<Kernels>(trans_b, rows, E, N, K, alpha, A, B, beta, C, stream);
}

void Kernels::grouped_gemm_wgrad(const int64_t* rows, int E, int N, int K, float alpha, CRef dC,
                                 CRef A, float beta, Ref dB, cudaStream_t stream) {
  grouped_gemm_wgrad_by_expert<Kernels>(
      rows, E, N, K, alpha, dC, A, beta, dB, stream,
      [&](Ref r, int64_t n) { ZT_CU_CUDA_CHECK(cudaMemsetAsync(r.p, 0, r.bytes(n), stream)); });
}

}  // namespace zt::cuda
