#pragma once
// Backend: the one interface the training stack computes through. It carries the kernels of
// kernels/ops.inc (same arguments on typed references, same conventions: read that file for each
// contract) plus the memory moves the stack needs between host and device, so src/model,
// src/tensor_parallel, src/zero and src/train never name a backend. kernels/kernel_backend.h
// implements the kernels once over a backend's kernel class: CpuBackend over cpu::Kernels,
// CudaBackend (kernels/cuda/cuda_backend.h, only with ZT_HAVE_CUDA) over cuda::Kernels on its
// compute stream.
//
// Every pointer a kernel takes is device memory of the backend (host memory on the CPU), except
// where a function says "host". Work is ordered on the backend's compute stream: a function that
// returns a host value (sum_squares, has_inf_or_nan) or fills host memory (copy_to_host) waits
// for it; everything else may return before the work is done.
//
// DeviceContext bundles what a layer needs to allocate and compute: the backend, the pool of
// its device memory and a pool of host memory for staging (the same pool on the CPU, pinned host
// memory on CUDA). Layers receive it next to the communicator they use; there is no global one.
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/ops.h"
#include "src/core/dtype.h"
#include "src/core/half.h"
#include "src/core/memory_pool.h"
#include "src/core/typed_ref.h"

namespace zt {

class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual Device device() const = 0;
  // True when the host may read and write this backend's memory directly (the CPU backend):
  // then no host staging is needed and callers skip it, so the CPU path keeps its bits and its
  // memory counts.
  virtual bool host_accessible() const = 0;
  // The compute stream (a cudaStream_t) for code that enqueues its own work; null on the CPU.
  virtual void* stream() const = 0;

  // ---- the kernels (kernels/ops.inc) ----
  // Activations and parameters are Refs in the run's working precision (every Ref argument of
  // one call has the same type, except where a comment says otherwise); statistics, losses and
  // parameter gradients are fp32.
  // C = alpha·op(A)·op(B) + beta·C; A and B of one type, C of that type or fp32; fp32 accumulation.
  virtual void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, CRef A, int lda,
                    CRef B, int ldb, float beta, Ref C, int ldc) = 0;
  // y: x's type, or fp32 (the head's logits).
  virtual void linear_forward(Ref y, CRef x, CRef w, CRef b, int N, int in, int out) = 0;
  virtual void linear_backward(Ref dx, float* dw, float* db, CRef dy, CRef x, CRef w, int N, int in,
                               int out, bool accumulate_dx) = 0;
  virtual void linear_gelu_forward(Ref y, Ref pre, CRef x, CRef w, CRef b, int N, int in,
                                   int out) = 0;
  virtual void linear_backward_gelu(Ref dx, CRef dy, CRef w, CRef pre, int N, int in, int out) = 0;
  virtual void embedding_forward(Ref out, const int32_t* tokens, CRef wte, CRef wpe, int B, int T,
                                 int C, int v_begin, int v_local) = 0;
  virtual void embedding_backward(float* dwte, float* dwpe, CRef dout, const int32_t* tokens, int B,
                                  int T, int C, int v_begin, int v_local) = 0;
  virtual void layernorm_forward(Ref out, float* mean, float* rstd, CRef x, CRef w, CRef b, int N,
                                 int C) = 0;
  virtual void layernorm_backward(Ref dx, float* dw, float* db, CRef dout, CRef x, CRef w,
                                  const float* mean, const float* rstd, int N, int C) = 0;
  virtual void dropout_add_layernorm_forward(Ref res, Ref out, float* mean, float* rstd, CRef a,
                                             CRef x, CRef w, CRef b, int N, int C,
                                             const DropoutParams& drop) = 0;
  virtual void gelu_forward(Ref out, CRef x, int64_t n) = 0;
  virtual void gelu_backward(Ref dx, CRef x, CRef dout, int64_t n) = 0;
  // lse [B,NH,T] and the backward's workspace delta [B,NH,T] are fp32.
  virtual void attention_forward(Ref out, float* lse, CRef qkv, int B, int T, int C, int NH,
                                 const DropoutParams& drop) = 0;
  virtual void attention_backward(Ref dqkv, float* delta, CRef dout, CRef qkv, CRef out,
                                  const float* lse, int B, int T, int C, int NH,
                                  const DropoutParams& drop) = 0;
  virtual void dropout_add_forward(Ref out, CRef a, CRef x, int64_t n,
                                   const DropoutParams& drop) = 0;
  virtual void dropout_backward(Ref dx, CRef dout, int64_t n, const DropoutParams& drop) = 0;
  virtual void add_inplace(Ref y, CRef x, int64_t n) = 0;
  // y[r·n + i] += x[i] for r < rows: a bias added to every row, a position table to every
  // sample. One rounding per element, as a plain add.
  virtual void add_broadcast(Ref y, CRef x, int64_t rows, int64_t n) = 0;
  // logits: fp32 or the working precision (the softmax, loss and gradient are fp32 either way).
  virtual void softmax_cross_entropy(Ref logits, float* losses, const int32_t* targets, int N,
                                     int V, int v_real, float dloss) = 0;
  virtual void adamw(float* param, float* m, float* v, const float* g, int64_t n,
                     const cpu::AdamWParams& p) = 0;
  // The three passes of the vocab-parallel cross-entropy (logits fp32 or the working precision).
  virtual void vocab_ce_max(CRef logits, float* mx, int N, int V, int v_begin, int v_real) = 0;
  virtual void vocab_ce_sum_exp(Ref logits, float* sum_z, const float* mx, const int32_t* targets,
                                int N, int V, int v_begin, int v_real) = 0;
  virtual void vocab_ce_grad(Ref logits, float* losses, const float* mx, const float* sum_z,
                             const int32_t* targets, int N, int V, int v_begin, int v_real,
                             float dloss) = 0;
  // Multi-tensor forms; the tables are host memory, x_type / grad_type their elements' dtype.
  virtual void sum_squares_multi(double* out, double* partials, const NormSegment* segs, int count,
                                 DType x_type) = 0;
  virtual void adamw_multi(const AdamWSegment* segs, int count, DType grad_type,
                           const cpu::AdamWParams& p) = 0;
  virtual double sum_squares(const float* x, int64_t n) = 0;
  virtual double sum_squares(const bf16* x, int64_t n) = 0;
  virtual double sum_squares(const fp16* x, int64_t n) = 0;
  virtual bool has_inf_or_nan(const float* x, int64_t n) = 0;
  virtual bool has_inf_or_nan(const bf16* x, int64_t n) = 0;
  virtual bool has_inf_or_nan(const fp16* x, int64_t n) = 0;
  virtual void cast(bf16* dst, const float* src, int64_t n) = 0;
  virtual void cast(fp16* dst, const float* src, int64_t n) = 0;
  virtual void cast(float* dst, const bf16* src, int64_t n) = 0;
  virtual void cast(float* dst, const fp16* src, int64_t n) = 0;
  virtual void accumulate(bf16* dst, const float* src, int64_t n) = 0;
  virtual void accumulate(fp16* dst, const float* src, int64_t n) = 0;
  virtual void scale_inplace(float* x, float s, int64_t n) = 0;

  // ---- memory ----
  // host -> device; the host buffer may be reused as soon as this returns.
  virtual void copy_to_device(void* dst, const void* host_src, size_t bytes) = 0;
  // device -> host; the host buffer holds the bytes when this returns.
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  // device -> device (non-overlapping).
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // `rows` rows of `width` bytes, device -> device, with row pitches in bytes.
  virtual void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                       size_t rows) = 0;
  virtual void fill_zero(void* dst, size_t bytes) = 0;
  // Waits for all work enqueued so far.
  virtual void synchronize() = 0;

  // Asynchronous copies between device memory and (pinned) host memory on a side stream, for
  // activation checkpoints offloaded to the host: offload() and fetch() start after the work
  // enqueued so far and overlap the compute enqueued after them; join_copies() orders all
  // compute enqueued afterwards behind every copy started so far. On the CPU they are plain
  // copies and join_copies() does nothing.
  virtual void offload(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void fetch(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void join_copies() = 0;
};

// The CPU backend: zt::cpu on host memory. Stateless, so one instance serves every caller.
Backend& cpu_backend();

struct DeviceContext {
  // The CPU backend over one host pool, which also serves as the staging pool. Implicit: a host
  // MemoryPool can only ever be driven by the CPU backend, so a pool alone says everything.
  DeviceContext(MemoryPool& pool);  // NOLINT(google-explicit-constructor)
  DeviceContext(Backend& backend, MemoryPool& pool, MemoryPool& host);

  Backend& backend() const { return *backend_; }
  MemoryPool& pool() const { return *pool_; }  // device memory
  MemoryPool& host() const { return *host_; }  // host memory: staging, host checkpoints
  // True when the host must stage data through host() to reach the device's memory.
  bool needs_staging() const { return !backend_->host_accessible(); }

 private:
  Backend* backend_;
  MemoryPool* pool_;
  MemoryPool* host_;
};

}  // namespace zt
