// Linear layers on cuBLASLt. linear_forward fuses the bias into the GEMM (CUBLASLT_EPILOGUE_BIAS).
//
// linear_bias_gelu_forward does NOT use CUBLASLT_EPILOGUE_GELU_AUX_BIAS: cuBLASLt's GeLU is the
// tanh approximation too, but its own device implementation, not kernels/common/gelu.h's
// exp_f32 form, so the activations would differ from the CPU backend's by rounding and the
// "one definition of the math" rule would break. It runs the BIAS epilogue (writing pre) and
// then gelu_forward over pre: one extra read of pre and write of y, both memory-bound.
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
void forward_gemm(Y* y, const T* x, const T* w, const T* b, int N, int in, int out,
                  cudaStream_t stream) {
  detail::LtMatmul g;
  g.trans_a = false;
  g.trans_b = true;
  g.M = N;
  g.N = out;
  g.K = in;
  g.A = x;
  g.lda = in;
  g.B = w;
  g.ldb = in;
  g.beta = 0.0f;
  g.C = y;
  g.ldc = out;
  g.ab_type = detail::cuda_type(dtype_of<T>());
  g.c_type = detail::cuda_type(dtype_of<Y>());
  if (b != nullptr) {
    ZT_CU_CHECK(dtype_of<Y>() == dtype_of<T>(),
                std::string("linear_forward: a bias needs the output in the operands' type"));
    g.epilogue = CUBLASLT_EPILOGUE_BIAS;
    g.bias = b;
  }
  detail::lt_matmul(g, stream);
}

}  // namespace

template <typename T, typename Y>
void Kernels::linear_forward(Y* y, const T* x, const T* w, const T* b, int N, int in, int out,
                             cudaStream_t stream) {
  check_shape("linear_forward", N, in, out);
  forward_gemm(y, x, w, b, N, in, out, stream);
}

void linear_bias_gelu_forward(float* y, float* pre, const float* x, const float* w, const float* b,
                              int N, int in, int out, cudaStream_t stream) {
  check_shape("linear_bias_gelu_forward", N, in, out);
  forward_gemm<float, float>(pre, x, w, b, N, in, out, stream);
  Kernels::gelu_forward(y, pre, int64_t{N} * out, stream);
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
                                            int, int, bool, cudaStream_t);
ZT_LINEAR(float)
ZT_LINEAR(bf16)
ZT_LINEAR(fp16)
#undef ZT_LINEAR
template void Kernels::linear_forward<bf16, float>(float*, const bf16*, const bf16*, const bf16*,
                                                   int, int, int, cudaStream_t);
template void Kernels::linear_forward<fp16, float>(float*, const fp16*, const fp16*, const fp16*,
                                                   int, int, int, cudaStream_t);

}  // namespace zt::cuda
