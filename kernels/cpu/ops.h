#pragma once
// The CPU backend's kernels: OpenMP loops over host memory, GEMMs through OpenBLAS sgemm and
// oneDNN. The operations both backends implement are the static members of cpu::Kernels,
// declared from the op list kernels/ops.inc (read it for each contract); this header adds the CPU's
// own GEMM entry points, which those kernels, the tests and the benchmarks use.
#include <cstdint>
#include <type_traits>

#include "kernels/common/adamw.h"
#include "kernels/common/attention.h"
#include "kernels/common/dropout.h"
#include "kernels/common/moe.h"
#include "kernels/common/multi_tensor.h"
#include "kernels/common/rope.h"
#include "kernels/op_list.h"
#include "src/core/dtype.h"
#include "src/core/half.h"
#include "src/core/typed_ref.h"

namespace zt::cpu {

using AdamWParams = zt::AdamWParams;  // kernels/common/adamw.h, shared with the CUDA backend

struct Kernels {
  // The CPU kernels run on the calling thread and its OpenMP team: nothing to say where.
  struct Exec {};
#include "kernels/declare_kernels.inc"
};

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, through cblas_sgemm.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);
// Kernels::gemm on typed pointers: A, B in T, C in T or float. Its engine: bf16 runs on oneDNN
// where the CPU has AVX512-BF16 or AMX; fp16, and bf16 elsewhere, convert tiles to fp32 for sgemm
// in a constant per-thread scratch; fp32 is sgemm, or oneDNN for large dense products outside
// parallel regions on AVX-512 (kernels/cpu/gemm_mixed.h). Safe to call from several threads.
template <typename T, typename TC>
void gemm_t(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const T* A, int lda,
            const T* B, int ldb, float beta, TC* C, int ldc) {
  Kernels::gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace zt::cpu
