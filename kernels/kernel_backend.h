#pragma once
// KernelBackend: the Backend's kernels, written once for every backend. Each operation turns the
// typed references it receives (Ref/CRef: a pointer and its dtype) into the typed pointers of
// one instantiation of the backend's kernel (kernels/ops.inc, the static members of `Kernels`)
// and calls it where `Self` runs its work: `self.exec()` (nothing on the CPU, the compute stream
// on CUDA). A backend is then its memory moves plus
//   class MyBackend final : public KernelBackend<my::Kernels, MyBackend>.
//
// The dtype that selects the instantiation is the one every Ref of the call shares (x, out or
// y, as below); Ref::as checks that the others agree. The exceptions: gemm (the kernels take
// the dtypes themselves), linear_forward (y may be fp32 under half operands: the head's logits)
// and the fp32-only statistics and gradients, which are plain float pointers.
#include <cstddef>
#include <cstdint>

#include "kernels/backend.h"
#include "src/core/error.h"

namespace zt {

template <class Kernels, class Self>
class KernelBackend : public Backend {
 public:
  void gemm(bool ta, bool tb, int M, int N, int K, float alpha, CRef A, int lda, CRef B, int ldb,
            float beta, Ref C, int ldc) override {
    ZT_CHECK(A.t == B.t, "gemm: operands in {} and {}", dtype_name(A.t), dtype_name(B.t));
    Kernels::gemm(ta, tb, M, N, K, alpha, A.p, lda, B.p, ldb, beta, C.p, ldc, A.t, C.t, on());
  }
  void linear_forward(Ref y, CRef x, CRef w, CRef b, int N, int in, int out) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      if (y.t == DType::F32)
        Kernels::linear_forward(y.as<float>(), x.as<T>(), w.as<T>(), b.as<T>(), N, in, out, on());
      else
        Kernels::linear_forward(y.as<T>(), x.as<T>(), w.as<T>(), b.as<T>(), N, in, out, on());
    });
  }
  void linear_backward(Ref dx, float* dw, float* db, CRef dy, CRef x, CRef w, int N, int in,
                       int out, bool accumulate_dx) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      Kernels::linear_backward(dx.as<T>(), dw, db, dy.as<T>(), x.as<T>(), w.as<T>(), N, in, out,
                               accumulate_dx, on());
    });
  }
  void linear_gelu_forward(Ref y, Ref pre, CRef x, CRef w, CRef b, int N, int in,
                           int out) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      Kernels::linear_gelu_forward(y.as<T>(), pre.as<T>(), x.as<T>(), w.as<T>(), b.as<T>(), N, in,
                                   out, on());
    });
  }
  void linear_backward_gelu(Ref dx, CRef dy, CRef w, CRef pre, int N, int in, int out) override {
    visit_dtype(dy.t, [&](auto t) {
      using T = decltype(t);
      Kernels::linear_backward_gelu(dx.as<T>(), dy.as<T>(), w.as<T>(), pre.as<T>(), N, in, out,
                                    on());
    });
  }
  void embedding_forward(Ref out, const int32_t* tokens, CRef wte, CRef wpe, int B, int T, int C,
                         int v_begin, int v_local) override {
    visit_dtype(out.t, [&](auto t) {
      using E = decltype(t);
      Kernels::embedding_forward(out.as<E>(), tokens, wte.as<E>(), wpe.as<E>(), B, T, C, v_begin,
                                 v_local, on());
    });
  }
  void embedding_backward(float* dwte, float* dwpe, CRef dout, const int32_t* tokens, int B, int T,
                          int C, int v_begin, int v_local) override {
    visit_dtype(dout.t, [&](auto t) {
      using E = decltype(t);
      Kernels::embedding_backward(dwte, dwpe, dout.as<E>(), tokens, B, T, C, v_begin, v_local,
                                  on());
    });
  }
  void layernorm_forward(Ref out, float* mean, float* rstd, CRef x, CRef w, CRef b, int N,
                         int C) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      Kernels::layernorm_forward(out.as<T>(), mean, rstd, x.as<T>(), w.as<T>(), b.as<T>(), N, C,
                                 on());
    });
  }
  void layernorm_backward(Ref dx, float* dw, float* db, CRef dout, CRef x, CRef w,
                          const float* mean, const float* rstd, int N, int C) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      Kernels::layernorm_backward(dx.as<T>(), dw, db, dout.as<T>(), x.as<T>(), w.as<T>(), mean,
                                  rstd, N, C, on());
    });
  }
  void dropout_add_layernorm_forward(Ref res, Ref out, float* mean, float* rstd, CRef a, CRef x,
                                     CRef w, CRef b, int N, int C,
                                     const DropoutParams& drop) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      Kernels::dropout_add_layernorm_forward(res.as<T>(), out.as<T>(), mean, rstd, a.as<T>(),
                                             x.as<T>(), w.as<T>(), b.as<T>(), N, C, drop, on());
    });
  }
  void gelu_forward(Ref out, CRef x, int64_t n) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      Kernels::gelu_forward(out.as<T>(), x.as<T>(), n, on());
    });
  }
  void gelu_backward(Ref dx, CRef x, CRef dout, int64_t n) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      Kernels::gelu_backward(dx.as<T>(), x.as<T>(), dout.as<T>(), n, on());
    });
  }
  void attention_forward(Ref out, float* lse, CRef qkv, int B, int T, int C, int NH,
                         const DropoutParams& drop) override {
    visit_dtype(qkv.t, [&](auto t) {
      using E = decltype(t);
      Kernels::attention_forward(out.as<E>(), lse, qkv.as<E>(), B, T, C, NH, drop, on());
    });
  }
  void attention_backward(Ref dqkv, float* delta, CRef dout, CRef qkv, CRef out, const float* lse,
                          int B, int T, int C, int NH, const DropoutParams& drop) override {
    visit_dtype(qkv.t, [&](auto t) {
      using E = decltype(t);
      Kernels::attention_backward(dqkv.as<E>(), delta, dout.as<E>(), qkv.as<E>(), out.as<E>(), lse,
                                  B, T, C, NH, drop, on());
    });
  }
  void dropout_add_forward(Ref out, CRef a, CRef x, int64_t n, const DropoutParams& drop) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      Kernels::dropout_add_forward(out.as<T>(), a.as<T>(), x.as<T>(), n, drop, on());
    });
  }
  void dropout_backward(Ref dx, CRef dout, int64_t n, const DropoutParams& drop) override {
    visit_dtype(dout.t, [&](auto t) {
      using T = decltype(t);
      Kernels::dropout_backward(dx.as<T>(), dout.as<T>(), n, drop, on());
    });
  }
  void add_inplace(Ref y, CRef x, int64_t n) override {
    visit_dtype(y.t, [&](auto t) {
      using T = decltype(t);
      Kernels::add_inplace(y.as<T>(), x.as<T>(), n, on());
    });
  }
  void add_broadcast(Ref y, CRef x, int64_t rows, int64_t n) override {
    visit_dtype(y.t, [&](auto t) {
      using T = decltype(t);
      Kernels::add_broadcast(y.as<T>(), x.as<T>(), rows, n, on());
    });
  }
  void softmax_cross_entropy(Ref logits, float* losses, const int32_t* targets, int N, int V,
                             int v_real, float dloss) override {
    visit_dtype(logits.t, [&](auto t) {
      using T = decltype(t);
      Kernels::softmax_cross_entropy(logits.as<T>(), losses, targets, N, V, v_real, dloss, on());
    });
  }
  void adamw(float* param, float* m, float* v, const float* g, int64_t n,
             const cpu::AdamWParams& p) override {
    Kernels::adamw(param, m, v, g, n, p, on());
  }
  void vocab_ce_max(CRef logits, float* mx, int N, int V, int v_begin, int v_real) override {
    visit_dtype(logits.t, [&](auto t) {
      using T = decltype(t);
      Kernels::vocab_ce_max(logits.as<T>(), mx, N, V, v_begin, v_real, on());
    });
  }
  void vocab_ce_sum_exp(Ref logits, float* sum_z, const float* mx, const int32_t* targets, int N,
                        int V, int v_begin, int v_real) override {
    visit_dtype(logits.t, [&](auto t) {
      using T = decltype(t);
      Kernels::vocab_ce_sum_exp(logits.as<T>(), sum_z, mx, targets, N, V, v_begin, v_real, on());
    });
  }
  void vocab_ce_grad(Ref logits, float* losses, const float* mx, const float* sum_z,
                     const int32_t* targets, int N, int V, int v_begin, int v_real,
                     float dloss) override {
    visit_dtype(logits.t, [&](auto t) {
      using T = decltype(t);
      Kernels::vocab_ce_grad(logits.as<T>(), losses, mx, sum_z, targets, N, V, v_begin, v_real,
                             dloss, on());
    });
  }
  void sum_squares_multi(double* out, double* partials, const NormSegment* segs, int count,
                         DType x_type) override {
    visit_dtype(x_type, [&](auto t) {
      Kernels::template sum_squares_multi<decltype(t)>(out, partials, segs, count, on());
    });
  }
  void adamw_multi(const AdamWSegment* segs, int count, DType grad_type,
                   const cpu::AdamWParams& p) override {
    visit_dtype(grad_type,
                [&](auto t) { Kernels::template adamw_multi<decltype(t)>(segs, count, p, on()); });
  }
  // The overloads the interface spells out per dtype forward as they are.
  double sum_squares(const float* x, int64_t n) override {
    return Kernels::sum_squares(x, n, on());
  }
  double sum_squares(const bf16* x, int64_t n) override { return Kernels::sum_squares(x, n, on()); }
  double sum_squares(const fp16* x, int64_t n) override { return Kernels::sum_squares(x, n, on()); }
  bool has_inf_or_nan(const float* x, int64_t n) override {
    return Kernels::has_inf_or_nan(x, n, on());
  }
  bool has_inf_or_nan(const bf16* x, int64_t n) override {
    return Kernels::has_inf_or_nan(x, n, on());
  }
  bool has_inf_or_nan(const fp16* x, int64_t n) override {
    return Kernels::has_inf_or_nan(x, n, on());
  }
  void cast(bf16* d, const float* s, int64_t n) override { Kernels::cast(d, s, n, on()); }
  void cast(fp16* d, const float* s, int64_t n) override { Kernels::cast(d, s, n, on()); }
  void cast(float* d, const bf16* s, int64_t n) override { Kernels::cast(d, s, n, on()); }
  void cast(float* d, const fp16* s, int64_t n) override { Kernels::cast(d, s, n, on()); }
  void accumulate(bf16* d, const float* s, int64_t n) override {
    Kernels::accumulate(d, s, n, on());
  }
  void accumulate(fp16* d, const float* s, int64_t n) override {
    Kernels::accumulate(d, s, n, on());
  }
  void scale_inplace(float* x, float s, int64_t n) override {
    Kernels::scale_inplace(x, s, n, on());
  }

 private:
  // Where Self runs its kernels (Self::exec(), which Self must declare).
  typename Kernels::Exec on() const { return static_cast<const Self&>(*this).exec(); }
};

}  // namespace zt
