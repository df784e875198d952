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

  void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
            const float* B, int ldb, float beta, float* C, int ldc) override {
    cpu::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  void linear_forward(float* y, const float* x, const float* w, const float* b, int N, int in,
                      int out) override {
    cpu::linear_forward(y, x, w, b, N, in, out);
  }
  void linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                       const float* w, int N, int in, int out, bool accumulate_dx) override {
    cpu::linear_backward(dx, dw, db, dy, x, w, N, in, out, accumulate_dx);
  }
  void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                         int B, int T, int C, int v_begin, int v_local) override {
    cpu::embedding_forward(out, tokens, wte, wpe, B, T, C, v_begin, v_local);
  }
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                          int T, int C, int v_begin, int v_local) override {
    cpu::embedding_backward(dwte, dwpe, dout, tokens, B, T, C, v_begin, v_local);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                         const float* b, int N, int C) override {
    cpu::layernorm_forward(out, mean, rstd, x, w, b, N, C);
  }
  void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                          const float* w, const float* mean, const float* rstd, int N,
                          int C) override {
    cpu::layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, N, C);
  }
  void gelu_forward(float* out, const float* x, int64_t n) override {
    cpu::gelu_forward(out, x, n);
  }
  void gelu_backward(float* dx, const float* x, const float* dout, int64_t n) override {
    cpu::gelu_backward(dx, x, dout, n);
  }
  void attention_forward(float* out, float* att, float*, const float* qkv, int B, int T, int C,
                         int NH, const DropoutParams& drop) override {
    cpu::attention_forward(out, att, qkv, B, T, C, NH, drop);
  }
  void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                          const float* att, int B, int T, int C, int NH,
                          const DropoutParams& drop) override {
    cpu::attention_backward(dqkv, scratch, dout, qkv, att, B, T, C, NH, drop);
  }
  void dropout_add_forward(float* out, const float* a, const float* x, int64_t n,
                           const DropoutParams& drop) override {
    cpu::dropout_add_forward(out, a, x, n, drop);
  }
  void dropout_backward(float* dx, const float* dout, int64_t n,
                        const DropoutParams& drop) override {
    cpu::dropout_backward(dx, dout, n, drop);
  }
  void add_inplace(float* y, const float* x, int64_t n) override { cpu::add_inplace(y, x, n); }
  void add_broadcast(float* y, const float* x, int64_t rows, int64_t n) override {
#pragma omp parallel for schedule(static) if (rows * n >= (int64_t{1} << 15))
    for (int64_t r = 0; r < rows; ++r) {
      float* row = y + r * n;
      for (int64_t i = 0; i < n; ++i) row[i] += x[i];
    }
  }
  void softmax_cross_entropy(float* logits, float* losses, const int32_t* targets, int N, int V,
                             int v_real, float dloss) override {
    cpu::softmax_cross_entropy(logits, losses, targets, N, V, v_real, dloss);
  }
  void adamw(float* param, float* m, float* v, const float* g, int64_t n,
             const cpu::AdamWParams& p) override {
    cpu::adamw(param, m, v, g, n, p);
  }
  double sum_squares(const float* x, int64_t n) override {
    return cpu::sum_squares(x, n);
  }
  double sum_squares(const bf16* x, int64_t n) override {
    return cpu::sum_squares(x, n);
  }
  double sum_squares(const fp16* x, int64_t n) override {
    return cpu::sum_squares(x, n);
  }
  bool has_inf_or_nan(const float* x, int64_t n) override {
    return cpu::has_inf_or_nan(x, n);
  }
  bool has_inf_or_nan(const bf16* x, int64_t n) override {
    return cpu::has_inf_or_nan(x, n);
  }
  bool has_inf_or_nan(const fp16* x, int64_t n) override {
    return cpu::has_inf_or_nan(x, n);
  }
  void cast(bf16* d, const float* s, int64_t n) override {
    cpu::cast(d, s, n);
  }
  void cast(fp16* d, const float* s, int64_t n) override {
    cpu::cast(d, s, n);
  }
  void cast(float* d, const bf16* s, int64_t n) override {
    cpu::cast(d, s, n);
  }
  void cast(float* d, const fp16* s, int64_t n) override {
    cpu::cast(d, s, n);
  }
  void accumulate(bf16* d, const float* s, int64_t n) override {
    cpu::accumulate(d, s, n);
  }
  void accumulate(fp16* d, const float* s, int64_t n) override {
    cpu::accumulate(d, s, n);
  }
  void scale_inplace(float* x, float s, int64_t n) override {
    cpu::scale_inplace(x, s, n);
  }

  void copy_to_device(void* dst, const void* src, size_t bytes) override {
    copy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    copy(dst, src, bytes);
  }
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
  void offload(void* dst, const void* src, size_t bytes) override {
    copy(dst, src, bytes);
  }
  void fetch(void* dst, const void* src, size_t bytes) override {
    copy(dst, src, bytes);
  }
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
