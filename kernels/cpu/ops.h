#pragma once
// The CPU backend's kernels. Row-major float32 compute on raw pointers (the model owns shapes);
// half-precision storage is converted at the edges (cast_*). Element-wise and reduction math
// comes from kernels/common so the CUDA backend computes the same thing.
//
// Conventions: N = rows (batch*seq tokens), C = channels. "+=" in a comment means the kernel
// accumulates into its output; everything else overwrites.
#include <cstdint>

#include "kernels/common/adamw.h"
#include "kernels/common/dropout.h"
#include "src/core/half.h"

namespace zt::cpu {

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, through cblas_sgemm.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);

// y[N,out] = x[N,in] * w[out,in]^T + b[out]   (b may be null)
void linear_forward(float* y, const float* x, const float* w, const float* b, int N, int in,
                    int out);
// dx[N,in] = dy * w (or += when accumulate_dx), dw[out,in] += dy^T x, db[out] += colsum(dy).
// dx and db may be null.
void linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                     const float* w, int N, int in, int out, bool accumulate_dx);

// out[b,t,:] = wte[tok - v_begin,:] (zero when the token is outside [v_begin, v_begin+v_local))
//             + wpe[t,:] (when wpe is not null).  tokens: [B,T].
void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                       int T, int C, int v_begin, int v_local);
// dwte[tok - v_begin,:] += dout[b,t,:] for tokens in range; dwpe[t,:] += sum_b dout[b,t,:]
// (dwpe may be null). Deterministic: no atomics, the same sum order on every run.
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                        int T, int C, int v_begin, int v_local);

// out = (x - mean) * rstd * w + b per row; mean and rstd [N] saved for backward. eps = 1e-5.
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int N, int C);
// dx += ..., dw += ..., db += ...
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int N, int C);

// GeLU, tanh approximation (GPT-2 / Megatron's "gelu" with approximate='tanh').
void gelu_forward(float* out, const float* x, int64_t n);
// dx = dout * gelu'(x)
void gelu_backward(float* dx, const float* x, const float* dout, int64_t n);

// Causal self-attention over local heads. qkv [B,T,3C] as q|k|v, each [B,T,NH,hd] with C=NH*hd.
// att [B,NH,T,T] receives the softmax probabilities (upper triangle zero), out [B,T,C].
// Dropout (p may be 0) is applied to the probabilities; the mask is recomputed in backward from
// (seed, offset) and never stored.
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       const DropoutParams& drop);
// dqkv [B,T,3C] = ..., scratch: at least B*NH*T*T floats (dAtt).
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH, const DropoutParams& drop);

// out = a + dropout(x)   (p = 0: plain residual add)
void dropout_add_forward(float* out, const float* a, const float* x, int64_t n,
                         const DropoutParams& drop);
// dx = dout * mask / (1 - p)   (da = dout is the caller's identity)
void dropout_backward(float* dx, const float* dout, int64_t n, const DropoutParams& drop);
// y += x
void add_inplace(float* y, const float* x, int64_t n);

// Softmax cross-entropy over logits [N,V] whose first v_real columns are real (the rest is
// padding, given probability 0). losses[N] = -log p[target]. The logits are overwritten with
// dlogits = (softmax - onehot(target)) * dloss. Numerically stable (row max subtracted).
void softmax_cross_entropy(float* logits, float* losses, const int32_t* targets, int N, int V,
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
