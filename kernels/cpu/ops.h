#pragma once
// The CPU backend's kernels on raw pointers (the model owns shapes). Activations and parameters
// are in the run's working precision T (float, bf16 or fp16; every such kernel is a template
// instantiated for the three); the arithmetic is fp32: each element is widened on load and
// rounded once on store. Statistics (layernorm mean/rstd, softmax max/sum), losses and
// parameter gradients are fp32. GEMMs take T operands with fp32 accumulation (gemm_mixed).
// Element-wise and reduction math comes from kernels/common so the CUDA backend computes the
// same thing.
//
// Conventions: N = rows (batch*seq tokens), C = channels. "+=" in a comment means the kernel
// accumulates into its output; everything else overwrites.
#include <cstdint>

#include "kernels/common/adamw.h"
#include "kernels/common/dropout.h"
#include "src/core/dtype.h"
#include "src/core/half.h"

namespace zt::cpu {

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, through cblas_sgemm.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);
// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major; A and B in ab_type (F32, BF16
// or F16), C in c_type (F32, or ab_type), fp32 accumulation. A half C is rounded once (nearest
// even) from the fp32 result; beta = 0 never reads C. bf16 runs on oneDNN where the CPU has
// AVX512-BF16 or AMX; fp16, and bf16 elsewhere, convert tiles to fp32 for sgemm in a constant
// per-thread scratch; fp32 is sgemm (kernels/cpu/gemm_mixed.h). Safe to call from several threads.
void gemm_mixed(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A,
                int lda, const void* B, int ldb, float beta, void* C, int ldc, DType ab_type,
                DType c_type);
// gemm_mixed on typed pointers: A, B in T, C in T or float.
template <typename T, typename TC>
void gemm_t(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const T* A, int lda,
            const T* B, int ldb, float beta, TC* C, int ldc) {
  gemm_mixed(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, dtype_of<T>(),
             dtype_of<TC>());
}

// y[N,out] = x[N,in] * w[out,in]^T + b[out]   (b may be null), rounded once into Y (T or float:
// the head's logits).
template <typename T, typename Y>
void linear_forward(Y* y, const T* x, const T* w, const T* b, int N, int in, int out);
// dx[N,in] = dy * w (or += when accumulate_dx), dw[out,in] += dy^T x, db[out] += colsum(dy).
// dx and db may be null.
template <typename T>
void linear_backward(T* dx, float* dw, float* db, const T* dy, const T* x, const T* w, int N,
                     int in, int out, bool accumulate_dx);

// out[b,t,:] = wte[tok - v_begin,:] (zero when the token is outside [v_begin, v_begin+v_local))
//             + wpe[t,:] (when wpe is not null).  tokens: [B,T].
template <typename T>
void embedding_forward(T* out, const int32_t* tokens, const T* wte, const T* wpe, int B, int Tn,
                       int C, int v_begin, int v_local);
// dwte[tok - v_begin,:] += dout[b,t,:] for tokens in range; dwpe[t,:] += sum_b dout[b,t,:]
// (dwpe may be null). Deterministic: no atomics, the same sum order on every run.
template <typename T>
void embedding_backward(float* dwte, float* dwpe, const T* dout, const int32_t* tokens, int B,
                        int Tn, int C, int v_begin, int v_local);

// out = (x - mean) * rstd * w + b per row; mean and rstd [N] saved for backward. eps = 1e-5.
template <typename T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* x, const T* w, const T* b, int N,
                       int C);
// dx += ..., dw += ..., db += ...
template <typename T>
void layernorm_backward(T* dx, float* dw, float* db, const T* dout, const T* x, const T* w,
                        const float* mean, const float* rstd, int N, int C);

// GeLU, tanh approximation (GPT-2 / Megatron's "gelu" with approximate='tanh').
template <typename T>
void gelu_forward(T* out, const T* x, int64_t n);
// dx = dout * gelu'(x)
template <typename T>
void gelu_backward(T* dx, const T* x, const T* dout, int64_t n);

// Causal self-attention over local heads. qkv [B,T,3C] as q|k|v, each [B,T,NH,hd] with C=NH*hd.
// att [B,NH,T,T] receives the softmax probabilities (upper triangle zero), out [B,T,C].
// Dropout (p may be 0) is applied to the probabilities; the mask is recomputed in backward from
// (seed, offset) and never stored.
// In half precision the scores and the softmax are fp32 (per-thread rows), P is stored rounded
// to T, and the two products run on T operands with fp32 accumulation.
template <typename T>
void attention_forward(T* out, T* att, const T* qkv, int B, int Tn, int C, int NH,
                       const DropoutParams& drop);
// dqkv [B,T,3C] = ..., scratch: at least B*NH*T*T elements of T (dAtt).
template <typename T>
void attention_backward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, int B,
                        int Tn, int C, int NH, const DropoutParams& drop);

// out = a + dropout(x)   (p = 0: plain residual add)
template <typename T>
void dropout_add_forward(T* out, const T* a, const T* x, int64_t n, const DropoutParams& drop);
// dx = dout * mask / (1 - p)   (da = dout is the caller's identity)
template <typename T>
void dropout_backward(T* dx, const T* dout, int64_t n, const DropoutParams& drop);
// y += x
template <typename T>
void add_inplace(T* y, const T* x, int64_t n);
// y[r·n + i] += x[i] for r < rows
template <typename T>
void add_broadcast(T* y, const T* x, int64_t rows, int64_t n);

// Softmax cross-entropy over logits [N,V] whose first v_real columns are real (the rest is
// padding, given probability 0). losses[N] = -log p[target]. The logits are overwritten with
// dlogits = (softmax - onehot(target)) * dloss. Numerically stable (row max subtracted). The
// logits may be half (a half GEMM's output, as under autocast): each row is widened into fp32,
// the softmax, loss and gradient are fp32, and the gradient is rounded once into the row.
template <typename T>
void softmax_cross_entropy(T* logits, float* losses, const int32_t* targets, int N, int V,
                           int v_real, float dloss);

// Decoupled-weight-decay Adam on fp32 master params (settings: kernels/common/adamw.h).
using AdamWParams = zt::AdamWParams;
void adamw(float* param, float* m, float* v, const float* g, int64_t n, const AdamWParams& p);

// Sum of squares in double (for global L2 norms across shards and ranks).
double sum_squares(const float* x, int64_t n);
double sum_squares(const bf16* x, int64_t n);
double sum_squares(const fp16* x, int64_t n);
// True when any element is inf or NaN.
bool has_inf_or_nan(const float* x, int64_t n);
bool has_inf_or_nan(const bf16* x, int64_t n);
bool has_inf_or_nan(const fp16* x, int64_t n);

// dtype casts, round to nearest even; and the half-gradient accumulation dst = round(dst + src).
void cast(bf16* dst, const float* src, int64_t n);
void cast(fp16* dst, const float* src, int64_t n);
void cast(float* dst, const bf16* src, int64_t n);
void cast(float* dst, const fp16* src, int64_t n);
void accumulate(bf16* dst, const float* src, int64_t n);
void accumulate(fp16* dst, const float* src, int64_t n);
void scale_inplace(float* x, float s, int64_t n);

}  // namespace zt::cpu
