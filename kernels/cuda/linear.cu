// Linear layers on cuBLASLt. linear_forward fuses the bias into the GEMM (CUBLASLT_EPILOGUE_BIAS;
// where cuBLASLt has no algorithm for it, the plain GEMM and add_broadcast).
//
// linear_gelu_forward uses CUBLASLT_EPILOGUE_GELU_AUX_BIAS: one GEMM writes y = gelu(x w^T + b)
// and, through the aux pointer, pre = x w^T + b. cuBLASLt's GELU is the tanh approximation, the
// same function as kernels/common/gelu.h (PyTorch relies on this: its cuBLASLt GELU epilogue
// backs approximate='tanh', pytorch/pytorch#104061), but its own device code applied to the fp32
// sum before rounding, so y may differ from the CPU backend's by a rounding of T; the GPU tests
// bound it. linear_backward_gelu uses CUBLASLT_EPILOGUE_DGELU the same way. Both need the aux
// leading dimension to be a multiple of 8 and an algorithm for the types; elsewhere they run the
// two unfused ops. DGELU_BGRAD is not used: it overwrites the bias gradient, the contract is
// db += colsum, and the fc bias gradient comes with its weight gradient anyway.
//
// linear_backward: dx and dw through cuBLASLt (dw accumulates with beta = 1). db is a
// deterministic column-sum kernel rather than CUBLASLT_EPILOGUE_BGRADB, because BGRADB
// overwrites the bias gradient and the contract is db += colsum(dy).
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/cuda/column_reduce.cuh"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace {

void check_shape(const char* what, int N, int in, int out) {
  ZT_CU_CHECK(N > 0 && in > 0 && out > 0,
              detail::cat(what, ": bad shape N=", N, " in=", in, " out=", out));
}

// y[N,out] = x[N,in] w[out,in]^T (+ b via the epilogue). x, w in T; y and b in Y (cuBLASLt's
// bias takes the output's type).
template <typename T, typename Y>
detail::LtMatmul forward_matmul(Y* y, const T* x, const T* w, const T* b, int N, int in, int out) {
  detail::LtMatmul g = detail::plain_matmul(false, true, N, out, in, 1.0f, x, in, w, in, 0.0f, y,
                                            out, dtype_of<T>(), dtype_of<Y>());
  if (b != nullptr) {
    ZT_CU_CHECK(dtype_of<Y>() == dtype_of<T>(),
                std::string("linear_forward: a bias needs the output in the operands' type"));
    g.epilogue = CUBLASLT_EPILOGUE_BIAS;
    g.bias = b;
  }
  return g;
}

// The GEMM with its bias epilogue; where cuBLASLt has no algorithm for the epilogue, the plain
// GEMM and the bias added by add_broadcast (rounded twice in half precision instead of once).
template <typename T, typename Y>
void forward_or_unfused(Y* y, const T* x, const T* w, const T* b, int N, int in, int out,
                        cudaStream_t stream) {
  detail::LtMatmul g = forward_matmul(y, x, w, b, N, in, out);
  if (b == nullptr) return detail::lt_matmul(g, stream);
  if (detail::lt_matmul_try(g, stream)) return;
  g.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  g.bias = nullptr;
  detail::lt_matmul(g, stream);
  if constexpr (std::is_same_v<T, Y>) Kernels::add_broadcast(y, b, N, out, stream);
}

}  // namespace

template <typename T, typename Y>
void Kernels::linear_forward(Y* y, const T* x, const T* w, const T* b, int N, int in, int out,
                             cudaStream_t stream) {
  check_shape("linear_forward", N, in, out);
  forward_or_unfused(y, x, w, b, N, in, out, stream);
}

template <typename T>
void Kernels::linear_gelu_forward(T* y, T* pre, const T* x, const T* w, const T* b, int N, int in,
                                  int out, cudaStream_t stream) {
  check_shape("linear_gelu_forward", N, in, out);
  detail::LtMatmul g = forward_matmul(y, x, w, b, N, in, out);
  if (out % 8 == 0) {
    g.epilogue = b != nullptr ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    g.aux = pre;
    g.aux_ld = out;
    if (detail::lt_matmul_try(g, stream)) return;
  }
  forward_or_unfused(pre, x, w, b, N, in, out, stream);
  gelu_forward(y, pre, int64_t{N} * out, stream);
}

template <typename T>
void Kernels::linear_backward_gelu(T* dx, const T* dy, const T* w, const T* pre, int N, int in,
                                   int out, cudaStream_t stream) {
  check_shape("linear_backward_gelu", N, in, out);
  detail::LtMatmul g = detail::plain_matmul(false, false, N, in, out, 1.0f, dy, out, w, in, 0.0f,
                                            dx, in, dtype_of<T>(), dtype_of<T>());
  if (in % 8 == 0) {
    g.epilogue = CUBLASLT_EPILOGUE_DGELU;
    g.aux = pre;
    g.aux_ld = in;
    if (detail::lt_matmul_try(g, stream)) return;
    g.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    g.aux = nullptr;
    g.aux_ld = 0;
  }
  detail::lt_matmul(g, stream);
  gelu_backward(dx, pre, dx, int64_t{N} * in, stream);
}

template <typename T>
void Kernels::linear_backward(T* dx, float* dw, float* db, const T* dy, const T* x, const T* w,
                              int N, int in, int out, bool accumulate_dx, cudaStream_t stream) {
  check_shape("linear_backward", N, in, out);
  if constexpr (std::is_same_v<T, float>) {
    if (dx != nullptr)
      cuda::gemm(false, false, N, in, out, 1.0f, dy, out, w, in, accumulate_dx ? 1.0f : 0.0f, dx,
                 in, stream);
    cuda::gemm(true, false, out, in, N, 1.0f, dy, out, x, in, 1.0f, dw, in, stream);
  } else {
    if (dx != nullptr)
      gemm_mixed(false, false, N, in, out, 1.0f, dy, out, w, in, accumulate_dx ? 1.0f : 0.0f, dx,
                 in, dtype_of<T>(), dtype_of<T>(), stream);
    gemm_mixed(true, false, out, in, N, 1.0f, dy, out, x, in, 1.0f, dw, in, dtype_of<T>(),
               DType::F32, stream);
  }
  if (db != nullptr)
    detail::column_reduce<1>(
        N, out, stream,
        [=] __device__(int n, int c) {
          return detail::Values<1>{{to_float(dy[int64_t{n} * out + c])}};
        },
        [=] __device__(int c, const float* tot) { db[c] += tot[0]; });
}

#define ZT_LINEAR(T)                                                                               \
  template void Kernels::linear_forward<T, T>(T*, const T*, const T*, const T*, int, int, int,     \
                                              cudaStream_t);                                       \
  template void Kernels::linear_backward<T>(T*, float*, float*, const T*, const T*, const T*, int, \
                                            int, int, bool, cudaStream_t);                         \
  template void Kernels::linear_gelu_forward<T>(T*, T*, const T*, const T*, const T*, int, int,    \
                                                int, cudaStream_t);                                \
  template void Kernels::linear_backward_gelu<T>(T*, const T*, const T*, const T*, int, int, int,  \
                                                 cudaStream_t);
ZT_LINEAR(float)
ZT_LINEAR(bf16)
ZT_LINEAR(fp16)
#undef ZT_LINEAR
template void Kernels::linear_forward<bf16, float>(float*, const bf16*, const bf16*, const bf16*,
                                                   int, int, int, cudaStream_t);
template void Kernels::linear_forward<fp16, float>(float*, const fp16*, const fp16*, const fp16*,
                                                   int, int, int, cudaStream_t);

}  // namespace zt::cuda
