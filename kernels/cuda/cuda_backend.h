#pragma once
// CudaBackend: the Backend interface (kernels/backend.h) over zt::cuda (kernels/cuda/ops.h) on
// one device. All work goes to its compute stream, in call order, so the stack's sequential code
// is correct without further synchronisation; functions returning host values wait for it.
// A second (copy) stream carries the activation-checkpoint offloads to pinned host memory, ordered
// with the compute stream by events. Built only with ZT_HAVE_CUDA.
#include <memory>

#include "kernels/backend.h"
#include "src/core/cuda_stream.h"

namespace zt {

class CudaBackend final : public Backend {
 public:
  // On the current device (cuda::select_device first); creates its two streams.
  CudaBackend();
  ~CudaBackend() override;

  Device device() const override { return Device::Cuda; }
  bool host_accessible() const override { return false; }
  void* stream() const override { return compute_.get(); }
  cudaStream_t compute_stream() const { return compute_.get(); }

  void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, CRef A, int lda, CRef B,
            int ldb, float beta, Ref C, int ldc) override;
  void linear_forward(Ref y, CRef x, CRef w, CRef b, int N, int in, int out) override;
  void linear_backward(Ref dx, float* dw, float* db, CRef dy, CRef x, CRef w, int N, int in,
                       int out, bool accumulate_dx) override;
  void embedding_forward(Ref out, const int32_t* tokens, CRef wte, CRef wpe, int B, int T, int C,
                         int v_begin, int v_local) override;
  void embedding_backward(float* dwte, float* dwpe, CRef dout, const int32_t* tokens, int B, int T,
                          int C, int v_begin, int v_local) override;
  void layernorm_forward(Ref out, float* mean, float* rstd, CRef x, CRef w, CRef b, int N,
                         int C) override;
  void layernorm_backward(Ref dx, float* dw, float* db, CRef dout, CRef x, CRef w,
                          const float* mean, const float* rstd, int N, int C) override;
  void gelu_forward(Ref out, CRef x, int64_t n) override;
  void gelu_backward(Ref dx, CRef x, CRef dout, int64_t n) override;
  void attention_forward(Ref out, Ref att, Ref scratch, CRef qkv, int B, int T, int C, int NH,
                         const DropoutParams& drop) override;
  void attention_backward(Ref dqkv, Ref scratch, CRef dout, CRef qkv, CRef att, int B, int T, int C,
                          int NH, const DropoutParams& drop) override;
  void dropout_add_forward(Ref out, CRef a, CRef x, int64_t n, const DropoutParams& drop) override;
  void dropout_backward(Ref dx, CRef dout, int64_t n, const DropoutParams& drop) override;
  void add_inplace(Ref y, CRef x, int64_t n) override;
  void add_broadcast(Ref y, CRef x, int64_t rows, int64_t n) override;
  void softmax_cross_entropy(Ref logits, float* losses, const int32_t* targets, int N, int V,
                             int v_real, float dloss) override;
  void adamw(float* param, float* m, float* v, const float* g, int64_t n,
             const cpu::AdamWParams& p) override;
  double sum_squares(const float* x, int64_t n) override;
  double sum_squares(const bf16* x, int64_t n) override;
  double sum_squares(const fp16* x, int64_t n) override;
  bool has_inf_or_nan(const float* x, int64_t n) override;
  bool has_inf_or_nan(const bf16* x, int64_t n) override;
  bool has_inf_or_nan(const fp16* x, int64_t n) override;
  void cast(bf16* dst, const float* src, int64_t n) override;
  void cast(fp16* dst, const float* src, int64_t n) override;
  void cast(float* dst, const bf16* src, int64_t n) override;
  void cast(float* dst, const fp16* src, int64_t n) override;
  void accumulate(bf16* dst, const float* src, int64_t n) override;
  void accumulate(fp16* dst, const float* src, int64_t n) override;
  void scale_inplace(float* x, float s, int64_t n) override;

  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
               size_t rows) override;
  void fill_zero(void* dst, size_t bytes) override;
  void synchronize() override;
  void offload(void* host_dst, const void* src, size_t bytes) override;
  void fetch(void* dst, const void* host_src, size_t bytes) override;
  void join_copies() override;

 private:
  void copy_stream_waits_compute();
  cuda::Stream compute_, copies_;
  cuda::Event compute_done_, copies_done_;
};

}  // namespace zt
