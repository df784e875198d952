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

void CudaBackend::gemm(bool ta, bool tb, int M, int N, int K, float alpha, CRef A, int lda, CRef B,
                       int ldb, float beta, Ref C, int ldc) {
  ZT_CHECK(A.t == B.t, "gemm: operands in {} and {}", dtype_name(A.t), dtype_name(B.t));
  if (A.t == DType::F32 && C.t == DType::F32)
    cuda::gemm(ta, tb, M, N, K, alpha, A.as<float>(), lda, B.as<float>(), ldb, beta, C.as<float>(),
               ldc, compute_.get());
  else
    cuda::gemm_mixed(ta, tb, M, N, K, alpha, A.p, lda, B.p, ldb, beta, C.p, ldc, A.t, C.t,
                     compute_.get());
}
void CudaBackend::linear_forward(Ref y, CRef x, CRef w, CRef b, int N, int in, int out) {
  visit_dtype(x.t, [&](auto t) {
    using T = decltype(t);
    if (y.t == DType::F32)
      cuda::linear_forward(y.as<float>(), x.as<T>(), w.as<T>(), b.as<T>(), N, in, out,
                           compute_.get());
    else
      cuda::linear_forward(y.as<T>(), x.as<T>(), w.as<T>(), b.as<T>(), N, in, out, compute_.get());
  });
}
void CudaBackend::linear_backward(Ref dx, float* dw, float* db, CRef dy, CRef x, CRef w, int N,
                                  int in, int out, bool accumulate_dx) {
  visit_dtype(x.t, [&](auto t) {
    using T = decltype(t);
    cuda::linear_backward(dx.as<T>(), dw, db, dy.as<T>(), x.as<T>(), w.as<T>(), N, in, out,
                          accumulate_dx, compute_.get());
  });
}
void CudaBackend::embedding_forward(Ref out, const int32_t* tokens, CRef wte, CRef wpe, int B,
                                    int T, int C, int v_begin, int v_local) {
  visit_dtype(out.t, [&](auto t) {
    using E = decltype(t);
    cuda::embedding_forward(out.as<E>(), tokens, wte.as<E>(), wpe.as<E>(), B, T, C, v_begin,
                            v_local, compute_.get());
  });
}
void CudaBackend::embedding_backward(float* dwte, float* dwpe, CRef dout, const int32_t* tokens,
                                     int B, int T, int C, int v_begin, int v_local) {
  visit_dtype(dout.t, [&](auto t) {
    using E = decltype(t);
    cuda::embedding_backward(dwte, dwpe, dout.as<E>(), tokens, B, T, C, v_begin, v_local,
                             compute_.get());
  });
}
void CudaBackend::layernorm_forward(Ref out, float* mean, float* rstd, CRef x, CRef w, CRef b,
                                    int N, int C) {
  visit_dtype(x.t, [&](auto t) {
    using T = decltype(t);
    cuda::layernorm_forward(out.as<T>(), mean, rstd, x.as<T>(), w.as<T>(), b.as<T>(), N, C,
                            compute_.get());
  });
}
void CudaBackend::layernorm_backward(Ref dx, float* dw, float* db, CRef dout, CRef x, CRef w,
                                     const float* mean, const float* rstd, int N, int C) {
  visit_dtype(x.t, [&](auto t) {
    using T = decltype(t);
    cuda::layernorm_backward(dx.as<T>(), dw, db, dout.as<T>(), x.as<T>(), w.as<T>(), mean, rstd, N,
                             C, compute_.get());
  });
}
void CudaBackend::gelu_forward(Ref out, CRef x, int64_t n) {
  visit_dtype(x.t, [&](auto t) {
    using T = decltype(t);
    cuda::gelu_forward(out.as<T>(), x.as<T>(), n, compute_.get());
  });
}
void CudaBackend::gelu_backward(Ref dx, CRef x, CRef dout, int64_t n) {
  visit_dtype(x.t, [&](auto t) {
    using T = decltype(t);
    cuda::gelu_backward(dx.as<T>(), x.as<T>(), dout.as<T>(), n, compute_.get());
  });
}
void CudaBackend::attention_forward(Ref out, Ref att, Ref scratch, CRef qkv, int B, int T, int C,
                                    int NH, const DropoutParams& drop) {
  // With the caller's scratch (the model's backward workspace, counted in MemoryPool) rather than
  // the kernels' own grow-only buffer; without one (fp32 only), the kernels' buffer.
  if (!scratch && qkv.t == DType::F32) {
    cuda::attention_forward(out.as<float>(), att.as<float>(), qkv.as<float>(), B, T, C, NH, drop,
                            compute_.get());
    return;
  }
  visit_dtype(qkv.t, [&](auto t) {
    using E = decltype(t);
    cuda::attention_forward(out.as<E>(), att.as<E>(), scratch.as<E>(), qkv.as<E>(), B, T, C, NH,
                            drop, compute_.get());
  });
}
void CudaBackend::attention_backward(Ref dqkv, Ref scratch, CRef dout, CRef qkv, CRef att, int B,
                                     int T, int C, int NH, const DropoutParams& drop) {
  visit_dtype(qkv.t, [&](auto t) {
    using E = decltype(t);
    cuda::attention_backward(dqkv.as<E>(), scratch.as<E>(), dout.as<E>(), qkv.as<E>(), att.as<E>(),
                             B, T, C, NH, drop, compute_.get());
  });
}
void CudaBackend::dropout_add_forward(Ref out, CRef a, CRef x, int64_t n,
                                      const DropoutParams& drop) {
  visit_dtype(x.t, [&](auto t) {
    using T = decltype(t);
    cuda::dropout_add_forward(out.as<T>(), a.as<T>(), x.as<T>(), n, drop, compute_.get());
  });
}
void CudaBackend::dropout_backward(Ref dx, CRef dout, int64_t n, const DropoutParams& drop) {
  visit_dtype(dout.t, [&](auto t) {
    using T = decltype(t);
    cuda::dropout_backward(dx.as<T>(), dout.as<T>(), n, drop, compute_.get());
  });
}
void CudaBackend::add_inplace(Ref y, CRef x, int64_t n) {
  visit_dtype(y.t, [&](auto t) {
    using T = decltype(t);
    cuda::add_inplace(y.as<T>(), x.as<T>(), n, compute_.get());
  });
}
void CudaBackend::add_broadcast(Ref y, CRef x, int64_t rows, int64_t n) {
  visit_dtype(y.t, [&](auto t) {
    using T = decltype(t);
    cuda::add_broadcast(y.as<T>(), x.as<T>(), rows, n, compute_.get());
  });
}
void CudaBackend::softmax_cross_entropy(Ref logits, float* losses, const int32_t* targets, int N,
                                        int V, int v_real, float dloss) {
  visit_dtype(logits.t, [&](auto t) {
    using T = decltype(t);
    cuda::softmax_cross_entropy(logits.as<T>(), losses, targets, N, V, v_real, dloss,
                                compute_.get());
  });
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
