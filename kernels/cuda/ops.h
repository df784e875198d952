#pragma once
// The CUDA backend's kernels, on device pointers. The operations both backends implement are the
// static members of cuda::Kernels, declared from the op list kernels/ops.inc (read it for each
// contract),
// each enqueued on the stream passed as its last argument (Exec = cudaStream_t). This header adds
// what only CUDA has: the fp32 and mixed GEMM engines and fused epilogues.
// Element-wise and reduction math comes from kernels/common, so the CPU tests cover it.
// Functions that return a host value (sum_squares, has_inf_or_nan) synchronise the stream.
//
// Precision: activations and parameters are in the working precision T (float, bf16 or fp16),
// as on the CPU backend (each templated kernel is instantiated for the three); arithmetic is
// fp32, statistics, losses and parameter gradients are fp32. GEMMs on fp32 operands run through
// cuBLASLt with CUBLAS_COMPUTE_32F (exact fp32, CPU and GPU agree to fp32 rounding) or, after
// set_tf32(true), on TF32 tensor cores; half operands run on tensor cores with fp32
// accumulation (bf16 needs sm_80).
// Device memory the kernels allocate themselves (cuBLASLt workspace, CUB temp storage, a few
// grow-only scratch buffers) is listed in kernels/cuda/context.h.
#include <cuda_runtime_api.h>

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

namespace zt::cuda {

using AdamWParams = zt::AdamWParams;  // kernels/common/adamw.h, shared with the CPU backend

struct Kernels {
  // The stream each kernel is enqueued on.
  using Exec = cudaStream_t;
#include "kernels/declare_kernels.inc"
};

// TF32 tensor cores for the GEMMs on fp32 operands (sm_80+; Megatron's default). Off, fp32
// GEMMs are exact fp32 as on the CPU. Process-wide: one device per process; set before training.
void set_tf32(bool on);
bool tf32();

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major like the CPU gemm.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc, cudaStream_t stream);
// The same with A and B in `ab_type` (BF16 or F16) and C in `c_type` (F32, BF16 or F16), fp32
// accumulation on tensor cores. Kernels::gemm takes either engine by the operands' type.
void gemm_mixed(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A,
                int lda, const void* B, int ldb, float beta, void* C, int ldc, DType ab_type,
                DType c_type, cudaStream_t stream);

// The attention kernels' square tiles for head size hd in `t` under a per-block shared-memory
// limit (the device's opt-in maximum at run time): the largest of 64, 32, 16 whose dynamic shared
// memory fits, for forward and for backward (its dQ kernel carves less), 0 where none does; and
// whether the carves are aligned as WMMA needs. Host code only: no device is touched.
struct AttentionTiling {
  int forward_tile = 0, backward_tile = 0;
  size_t forward_bytes = 0, backward_bytes = 0, dq_bytes = 0;
  bool aligned = false;
};
AttentionTiling attention_tiling(int hd, DType t, size_t smem_limit);

// out[N,C] = gelu(x + bias[C]) (fused bias + GeLU when the GEMM cannot take the epilogue).
void bias_gelu_forward(float* out, const float* x, const float* bias, int N, int C,
                       cudaStream_t stream);

}  // namespace zt::cuda
