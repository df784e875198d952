#include "kernels/cuda/cuda_backend.h"

#include "kernels/cuda/ops.h"
#include "src/core/cuda_check.h"

namespace zt {
namespace {

// The settings travel field by field: the two backends' structs are one type or two identical
// ones, depending on the kernels' version, and this compiles against either.
cuda::AdamWParams to_cuda(const cpu::AdamWParams& p) {
  cuda::AdamWParams q;
  q.lr = p.lr;
  q.beta1 = p.beta1;
  q.beta2 = p.beta2;
  q.eps = p.eps;
  q.weight_decay = p.weight_decay;
  q.grad_scale = p.grad_scale;
  q.step = p.step;
  return q;
}

}  // namespace

CudaBackend::CudaBackend() = default;
CudaBackend::~CudaBackend() = default;

void CudaBackend::gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                       const float* B, int ldb, float beta, float* C, int ldc) {
  cuda::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, compute_.get());
}
void CudaBackend::linear_forward(float* y, const float* x, const float* w, const float* b, int N,
                                 int in, int out) {
  cuda::linear_forward(y, x, w, b, N, in, out, compute_.get());
}
void CudaBackend::linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                                  const float* w, int N, int in, int out, bool accumulate_dx) {
  cuda::linear_backward(dx, dw, db, dy, x, w, N, in, out, accumulate_dx, compute_.get());
}
void CudaBackend::embedding_forward(float* out, const int32_t* tokens, const float* wte,
                                    const float* wpe, int B, int T, int C, int v_begin,
                                    int v_local) {
  cuda::embedding_forward(out, tokens, wte, wpe, B, T, C, v_begin, v_local, compute_.get());
}
void CudaBackend::embedding_backward(float* dwte, float* dwpe, const float* dout,
                                     const int32_t* tokens, int B, int T, int C, int v_begin,
                                     int v_local) {
  cuda::embedding_backward(dwte, dwpe, dout, tokens, B, T, C, v_begin, v_local, compute_.get());
}
void CudaBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* x,
                                    const float* w, const float* b, int N, int C) {
  cuda::layernorm_forward(out, mean, rstd, x, w, b, N, C, compute_.get());
}
void CudaBackend::layernorm_backward(float* dx, float* dw, float* db, const float* dout,
                                     const float* x, const float* w, const float* mean,
                                     const float* rstd, int N, int C) {
  cuda::layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, N, C, compute_.get());
}
void CudaBackend::gelu_forward(float* out, const float* x, int64_t n) {
  cuda::gelu_forward(out, x, n, compute_.get());
}
void CudaBackend::gelu_backward(float* dx, const float* x, const float* dout, int64_t n) {
  cuda::gelu_backward(dx, x, dout, n, compute_.get());
}
void CudaBackend::attention_forward(float* out, float* att, float* scratch, const float* qkv, int B,
                                    int T, int C, int NH, const DropoutParams& drop) {
  // With the caller's scratch (the model's backward workspace, counted in MemoryPool) rather than
  // the kernels' own grow-only buffer; without one, the kernels' buffer.
  if (scratch != nullptr)
    cuda::attention_forward(out, att, scratch, qkv, B, T, C, NH, drop, compute_.get());
  else
    cuda::attention_forward(out, att, qkv, B, T, C, NH, drop, compute_.get());
}
void CudaBackend::attention_backward(float* dqkv, float* scratch, const float* dout,
                                     const float* qkv, const float* att, int B, int T, int C,
                                     int NH, const DropoutParams& drop) {
  cuda::attention_backward(dqkv, scratch, dout, qkv, att, B, T, C, NH, drop, compute_.get());
}
void CudaBackend::dropout_add_forward(float* out, const float* a, const float* x, int64_t n,
                                      const DropoutParams& drop) {
  cuda::dropout_add_forward(out, a, x, n, drop, compute_.get());
}
void CudaBackend::dropout_backward(float* dx, const float* dout, int64_t n,
                                   const DropoutParams& drop) {
  cuda::dropout_backward(dx, dout, n, drop, compute_.get());
}
void CudaBackend::add_inplace(float* y, const float* x, int64_t n) {
  cuda::add_inplace(y, x, n, compute_.get());
}
void CudaBackend::add_broadcast(float* y, const float* x, int64_t rows, int64_t n) {
  // No broadcast kernel in the contract: one add per row. Only tensor-parallel runs use it (the
  // row-parallel bias after its all-reduce, the position table after the embedding's), where it
  // is small next to the GEMMs around it.
  for (int64_t r = 0; r < rows; ++r) cuda::add_inplace(y + r * n, x, n, compute_.get());
}
void CudaBackend::softmax_cross_entropy(float* logits, float* losses, const int32_t* targets, int N,
                                        int V, int v_real, float dloss) {
  cuda::softmax_cross_entropy(logits, losses, targets, N, V, v_real, dloss, compute_.get());
}
void CudaBackend::adamw(float* param, float* m, float* v, const float* g, int64_t n,
                        const cpu::AdamWParams& p) {
  cuda::adamw(param, m, v, g, n, to_cuda(p), compute_.get());
}
double CudaBackend::sum_squares(const float* x, int64_t n) {
  return cuda::sum_squares(x, n, compute_.get());
}
double CudaBackend::sum_squares(const bf16* x, int64_t n) {
  return cuda::sum_squares(x, n, compute_.get());
}
double CudaBackend::sum_squares(const fp16* x, int64_t n) {
  return cuda::sum_squares(x, n, compute_.get());
}
bool CudaBackend::has_inf_or_nan(const float* x, int64_t n) {
  return cuda::has_inf_or_nan(x, n, compute_.get());
}
bool CudaBackend::has_inf_or_nan(const bf16* x, int64_t n) {
  return cuda::has_inf_or_nan(x, n, compute_.get());
}
bool CudaBackend::has_inf_or_nan(const fp16* x, int64_t n) {
  return cuda::has_inf_or_nan(x, n, compute_.get());
}
void CudaBackend::cast(bf16* d, const float* s, int64_t n) {
  cuda::cast(d, s, n, compute_.get());
}
void CudaBackend::cast(fp16* d, const float* s, int64_t n) {
  cuda::cast(d, s, n, compute_.get());
}
void CudaBackend::cast(float* d, const bf16* s, int64_t n) {
  cuda::cast(d, s, n, compute_.get());
}
void CudaBackend::cast(float* d, const fp16* s, int64_t n) {
  cuda::cast(d, s, n, compute_.get());
}
void CudaBackend::accumulate(bf16* d, const float* s, int64_t n) {
  cuda::accumulate(d, s, n, compute_.get());
}
void CudaBackend::accumulate(fp16* d, const float* s, int64_t n) {
  cuda::accumulate(d, s, n, compute_.get());
}
void CudaBackend::scale_inplace(float* x, float s, int64_t n) {
  cuda::scale_inplace(x, s, n, compute_.get());
}

// Host copies synchronise: the host buffer (often pageable, often reused right away) is safe
// to touch when they return, and every device result the host reads is complete.
void CudaBackend::copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, compute_.get()));
  compute_.synchronize();
}
void CudaBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, compute_.get()));
  compute_.synchronize();
}
void CudaBackend::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, compute_.get()));
}
void CudaBackend::copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                          size_t width, size_t rows) {
  if (width == 0 || rows == 0) return;
  ZT_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows,
                                  cudaMemcpyDeviceToDevice, compute_.get()));
}
void CudaBackend::fill_zero(void* dst, size_t bytes) {
  if (bytes == 0) return;
  ZT_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, compute_.get()));
}
void CudaBackend::synchronize() {
  compute_.synchronize();
}

void CudaBackend::copy_stream_waits_compute() {
  compute_done_.record(compute_.get());
  copies_.wait(compute_done_);
}
void CudaBackend::offload(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  copy_stream_waits_compute();  // the source is complete
  ZT_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, copies_.get()));
}
void CudaBackend::fetch(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  copy_stream_waits_compute();  // earlier readers of the destination are done
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, copies_.get()));
}
void CudaBackend::join_copies() {
  copies_done_.record(copies_.get());
  compute_.wait(copies_done_);
}

}  // namespace zt
