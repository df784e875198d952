#include "kernels/backend.h"

#include <cstring>

#include "src/core/error.h"

namespace zt {
namespace {

// zt::cpu behind the Backend interface: each call forwards unchanged, so the CPU backend's bits
// are those of the kernels themselves.
class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device::Cpu; }
  bool host_accessible() const override { return true; }
  void* stream() const override { return nullptr; }

  void gemm(bool ta, bool tb, int M, int N, int K, float alpha, CRef A, int lda, CRef B, int ldb,
            float beta, Ref C, int ldc) override {
    ZT_CHECK(A.t == B.t, "gemm: operands in {} and {}", dtype_name(A.t), dtype_name(B.t));
    cpu::gemm_mixed(ta, tb, M, N, K, alpha, A.p, lda, B.p, ldb, beta, C.p, ldc, A.t, C.t);
  }
  void linear_forward(Ref y, CRef x, CRef w, CRef b, int N, int in, int out) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      if (y.t == DType::F32)
        cpu::linear_forward(y.as<float>(), x.as<T>(), w.as<T>(), b.as<T>(), N, in, out);
      else
        cpu::linear_forward(y.as<T>(), x.as<T>(), w.as<T>(), b.as<T>(), N, in, out);
    });
  }
  void linear_backward(Ref dx, float* dw, float* db, CRef dy, CRef x, CRef w, int N, int in,
                       int out, bool accumulate_dx) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      cpu::linear_backward(dx.as<T>(), dw, db, dy.as<T>(), x.as<T>(), w.as<T>(), N, in, out,
                           accumulate_dx);
    });
  }
  void embedding_forward(Ref out, const int32_t* tokens, CRef wte, CRef wpe, int B, int T, int C,
                         int v_begin, int v_local) override {
    visit_dtype(out.t, [&](auto t) {
      using E = decltype(t);
      cpu::embedding_forward(out.as<E>(), tokens, wte.as<E>(), wpe.as<E>(), B, T, C, v_begin,
                             v_local);
    });
  }
  void embedding_backward(float* dwte, float* dwpe, CRef dout, const int32_t* tokens, int B, int T,
                          int C, int v_begin, int v_local) override {
    visit_dtype(dout.t, [&](auto t) {
      using E = decltype(t);
      cpu::embedding_backward(dwte, dwpe, dout.as<E>(), tokens, B, T, C, v_begin, v_local);
    });
  }
  void layernorm_forward(Ref out, float* mean, float* rstd, CRef x, CRef w, CRef b, int N,
                         int C) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      cpu::layernorm_forward(out.as<T>(), mean, rstd, x.as<T>(), w.as<T>(), b.as<T>(), N, C);
    });
  }
  void layernorm_backward(Ref dx, float* dw, float* db, CRef dout, CRef x, CRef w,
                          const float* mean, const float* rstd, int N, int C) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      cpu::layernorm_backward(dx.as<T>(), dw, db, dout.as<T>(), x.as<T>(), w.as<T>(), mean, rstd, N,
                              C);
    });
  }
  void gelu_forward(Ref out, CRef x, int64_t n) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      cpu::gelu_forward(out.as<T>(), x.as<T>(), n);
    });
  }
  void gelu_backward(Ref dx, CRef x, CRef dout, int64_t n) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      cpu::gelu_backward(dx.as<T>(), x.as<T>(), dout.as<T>(), n);
    });
  }
  void attention_forward(Ref out, Ref att, Ref, CRef qkv, int B, int T, int C, int NH,
                         const DropoutParams& drop) override {
    visit_dtype(qkv.t, [&](auto t) {
      using E = decltype(t);
      cpu::attention_forward(out.as<E>(), att.as<E>(), qkv.as<E>(), B, T, C, NH, drop);
    });
  }
  void attention_backward(Ref dqkv, Ref scratch, CRef dout, CRef qkv, CRef att, int B, int T, int C,
                          int NH, const DropoutParams& drop) override {
    visit_dtype(qkv.t, [&](auto t) {
      using E = decltype(t);
      cpu::attention_backward(dqkv.as<E>(), scratch.as<E>(), dout.as<E>(), qkv.as<E>(), att.as<E>(),
                              B, T, C, NH, drop);
    });
  }
  void dropout_add_forward(Ref out, CRef a, CRef x, int64_t n, const DropoutParams& drop) override {
    visit_dtype(x.t, [&](auto t) {
      using T = decltype(t);
      cpu::dropout_add_forward(out.as<T>(), a.as<T>(), x.as<T>(), n, drop);
    });
  }
  void dropout_backward(Ref dx, CRef dout, int64_t n, const DropoutParams& drop) override {
    visit_dtype(dout.t, [&](auto t) {
      using T = decltype(t);
      cpu::dropout_backward(dx.as<T>(), dout.as<T>(), n, drop);
    });
  }
  void add_inplace(Ref y, CRef x, int64_t n) override {
    visit_dtype(y.t, [&](auto t) {
      using T = decltype(t);
      cpu::add_inplace(y.as<T>(), x.as<T>(), n);
    });
  }
  void add_broadcast(Ref y, CRef x, int64_t rows, int64_t n) override {
    visit_dtype(y.t, [&](auto t) {
      using T = decltype(t);
      cpu::add_broadcast(y.as<T>(), x.as<T>(), rows, n);
    });
  }
  void softmax_cross_entropy(Ref logits, float* losses, const int32_t* targets, int N, int V,
                             int v_real, float dloss) override {
    visit_dtype(logits.t, [&](auto t) {
      using T = decltype(t);
      cpu::softmax_cross_entropy(logits.as<T>(), losses, targets, N, V, v_real, dloss);
    });
  }
  void adamw(float* param, float* m, float* v, const float* g, int64_t n,
             const cpu::AdamWParams& p) override {
    cpu::adamw(param, m, v, g, n, p);
  }
  double sum_squares(const float* x, int64_t n) override { return cpu::sum_squares(x, n); }
  double sum_squares(const bf16* x, int64_t n) override { return cpu::sum_squares(x, n); }
  double sum_squares(const fp16* x, int64_t n) override { return cpu::sum_squares(x, n); }
  bool has_inf_or_nan(const float* x, int64_t n) override { return cpu::has_inf_or_nan(x, n); }
  bool has_inf_or_nan(const bf16* x, int64_t n) override { return cpu::has_inf_or_nan(x, n); }
  bool has_inf_or_nan(const fp16* x, int64_t n) override { return cpu::has_inf_or_nan(x, n); }
  void cast(bf16* d, const float* s, int64_t n) override { cpu::cast(d, s, n); }
  void cast(fp16* d, const float* s, int64_t n) override { cpu::cast(d, s, n); }
  void cast(float* d, const bf16* s, int64_t n) override { cpu::cast(d, s, n); }
  void cast(float* d, const fp16* s, int64_t n) override { cpu::cast(d, s, n); }
  void accumulate(bf16* d, const float* s, int64_t n) override { cpu::accumulate(d, s, n); }
  void accumulate(fp16* d, const float* s, int64_t n) override { cpu::accumulate(d, s, n); }
  void scale_inplace(float* x, float s, int64_t n) override { cpu::scale_inplace(x, s, n); }

  void copy_to_device(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0 && dst != src) std::memcpy(dst, src, bytes);
  }
  void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
               size_t rows) override {
    for (size_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch,
                  static_cast<const char*>(src) + r * src_pitch, width);
  }
  void fill_zero(void* dst, size_t bytes) override {
    if (bytes > 0) std::memset(dst, 0, bytes);
  }
  void synchronize() override {}
  void offload(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void fetch(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void join_copies() override {}
};

}  // namespace

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

DeviceContext::DeviceContext(MemoryPool& pool)
    : backend_(&cpu_backend()), pool_(&pool), host_(&pool) {
  ZT_CHECK(pool.device() == Device::Cpu,
           "a {} memory pool needs its backend: pass a DeviceContext with the CUDA backend",
           device_name(pool.device()));
}

DeviceContext::DeviceContext(Backend& backend, MemoryPool& pool, MemoryPool& host)
    : backend_(&backend), pool_(&pool), host_(&host) {
  ZT_CHECK(pool.device() == backend.device(), "a {} memory pool given to the {} backend",
           device_name(pool.device()), device_name(backend.device()));
}

}  // namespace zt
