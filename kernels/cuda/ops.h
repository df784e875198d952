#pragma once
// The CUDA backend's kernels: the same operations, arguments and conventions as
// kernels/cpu/ops.h (read that header for each one's contract), on device pointers, enqueued on
// `stream`. Element-wise and reduction math comes from kernels/common, so the CPU tests cover it.
// Functions that return a host value (sum_squares, has_inf_or_nan) synchronise `stream`.
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

#include "kernels/common/adamw.h"
#include "kernels/common/dropout.h"
#include "src/core/dtype.h"
#include "src/core/half.h"

namespace zt::cuda {

// TF32 tensor cores for the GEMMs on fp32 operands (sm_80+; Megatron's default). Off, fp32
// GEMMs are exact fp32 as on the CPU. Process-wide: one device per process; set before training.
void set_tf32(bool on);
bool tf32();

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major like the CPU gemm.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc, cudaStream_t stream);
// The same with A and B in `ab_type` (BF16 or F16) and C in `c_type` (F32, BF16 or F16), fp32
// accumulation on tensor cores.
void gemm_mixed(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A,
                int lda, const void* B, int ldb, float beta, void* C, int ldc, DType ab_type,
                DType c_type, cudaStream_t stream);

// y: T, or float (the head's logits, no bias).
template <typename T, typename Y>
void linear_forward(Y* y, const T* x, const T* w, const T* b, int N, int in, int out,
                    cudaStream_t stream);
// y = gelu(x w^T + b) and pre = x w^T + b (pre is what backward needs), fused in one cuBLASLt
// epilogue where available.
void linear_bias_gelu_forward(float* y, float* pre, const float* x, const float* w, const float* b,
                              int N, int in, int out, cudaStream_t stream);
template <typename T>
void linear_backward(T* dx, float* dw, float* db, const T* dy, const T* x, const T* w, int N,
                     int in, int out, bool accumulate_dx, cudaStream_t stream);

template <typename E>
void embedding_forward(E* out, const int32_t* tokens, const E* wte, const E* wpe, int B, int T,
                       int C, int v_begin, int v_local, cudaStream_t stream);
// Deterministic (no floating-point atomics).
template <typename E>
void embedding_backward(float* dwte, float* dwpe, const E* dout, const int32_t* tokens, int B,
                        int T, int C, int v_begin, int v_local, cudaStream_t stream);

template <typename T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* x, const T* w, const T* b, int N,
                       int C, cudaStream_t stream);
template <typename T>
void layernorm_backward(T* dx, float* dw, float* db, const T* dout, const T* x, const T* w,
                        const float* mean, const float* rstd, int N, int C, cudaStream_t stream);

template <typename T>
void gelu_forward(T* out, const T* x, int64_t n, cudaStream_t stream);
template <typename T>
void gelu_backward(T* dx, const T* x, const T* dout, int64_t n, cudaStream_t stream);
// out[N,C] = gelu(x + bias[C]) (fused bias + GeLU when the GEMM cannot take the epilogue).
void bias_gelu_forward(float* out, const float* x, const float* bias, int N, int C,
                       cudaStream_t stream);

// Causal self-attention; same layouts as the CPU kernel. scratch: B*NH*T*T floats.
//
// Forward with dropout needs the dropped probabilities for P V while att keeps the undropped
// ones: attention_forward_scratch_floats() says how many floats (B*NH*T*T when drop.p > 0, else
// 0). The overload with `scratch` uses the caller's buffer (null is fine when that is 0); the
// one without it takes a grow-only internal buffer (kernels/cuda/context.h).
int64_t attention_forward_scratch_floats(int B, int T, int NH, const DropoutParams& drop);
template <typename E>
void attention_forward(E* out, E* att, E* scratch, const E* qkv, int B, int T, int C, int NH,
                       const DropoutParams& drop, cudaStream_t stream);
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       const DropoutParams& drop, cudaStream_t stream);
template <typename E>
void attention_backward(E* dqkv, E* scratch, const E* dout, const E* qkv, const E* att, int B,
                        int T, int C, int NH, const DropoutParams& drop, cudaStream_t stream);

template <typename T>
void dropout_add_forward(T* out, const T* a, const T* x, int64_t n, const DropoutParams& drop,
                         cudaStream_t stream);
template <typename T>
void dropout_backward(T* dx, const T* dout, int64_t n, const DropoutParams& drop,
                      cudaStream_t stream);
template <typename T>
void add_inplace(T* y, const T* x, int64_t n, cudaStream_t stream);
// y[r·n + i] += x[i] for r < rows, one launch.
template <typename T>
void add_broadcast(T* y, const T* x, int64_t rows, int64_t n, cudaStream_t stream);

template <typename T>
void softmax_cross_entropy(T* logits, float* losses, const int32_t* targets, int N, int V,
                           int v_real, float dloss, cudaStream_t stream);

using AdamWParams = zt::AdamWParams;  // kernels/common/adamw.h, shared with the CPU backend
void adamw(float* param, float* m, float* v, const float* g, int64_t n, const AdamWParams& p,
           cudaStream_t stream);
// Multi-tensor fused AdamW over a shard made of several (param, m, v, grad) ranges, one launch;
// when `working` is not null the updated parameter is also written there in `working_type`
// (BF16 or F16: the half working copy, in the same pass). `tensors` is normally a device array;
// a host array is copied to an internal device buffer first (kernels/cuda/context.h).
struct AdamWTensor {
  float* param;
  float* m;
  float* v;
  const float* grad;
  void* working;
  int64_t n;
};
void adamw_multi(const AdamWTensor* tensors, int count, DType working_type, const AdamWParams& p,
                 cudaStream_t stream);

double sum_squares(const float* x, int64_t n, cudaStream_t stream);
double sum_squares(const bf16* x, int64_t n, cudaStream_t stream);
double sum_squares(const fp16* x, int64_t n, cudaStream_t stream);
bool has_inf_or_nan(const float* x, int64_t n, cudaStream_t stream);
bool has_inf_or_nan(const bf16* x, int64_t n, cudaStream_t stream);
bool has_inf_or_nan(const fp16* x, int64_t n, cudaStream_t stream);

void cast(bf16* dst, const float* src, int64_t n, cudaStream_t stream);
void cast(fp16* dst, const float* src, int64_t n, cudaStream_t stream);
void cast(float* dst, const bf16* src, int64_t n, cudaStream_t stream);
void cast(float* dst, const fp16* src, int64_t n, cudaStream_t stream);
void accumulate(bf16* dst, const float* src, int64_t n, cudaStream_t stream);
void accumulate(fp16* dst, const float* src, int64_t n, cudaStream_t stream);
void scale_inplace(float* x, float s, int64_t n, cudaStream_t stream);

}  // namespace zt::cuda
