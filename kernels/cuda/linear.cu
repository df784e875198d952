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

// y[N,out] = x[N,in] w[out,in]^T (+ b via the epilogue).
void forward_gemm(float* y, const float* x, const float* w, const float* b, int N, int in, int out,
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
  if (b != nullptr) {
    g.epilogue = CUBLASLT_EPILOGUE_BIAS;
    g.bias = b;
  }
  detail::lt_matmul(g, stream);
}

}  // namespace

void linear_forward(float* y, const float* x, const float* w, const float* b, int N, int in,
                    int out, cudaStream_t stream) {
  check_shape("linear_forward", N, in, out);
  forward_gemm(y, x, w, b, N, in, out, stream);
}

void linear_bias_gelu_forward(float* y, float* pre, const float* x, const float* w, const float* b,
                              int N, int in, int out, cudaStream_t stream) {
  check_shape("linear_bias_gelu_forward", N, in, out);
  forward_gemm(pre, x, w, b, N, in, out, stream);
  gelu_forward(y, pre, int64_t{N} * out, stream);
}

void linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                     const float* w, int N, int in, int out, bool accumulate_dx,
                     cudaStream_t stream) {
  check_shape("linear_backward", N, in, out);
  if (dx != nullptr)
    gemm(false, false, N, in, out, 1.0f, dy, out, w, in, accumulate_dx ? 1.0f : 0.0f, dx, in,
         stream);
  gemm(true, false, out, in, N, 1.0f, dy, out, x, in, 1.0f, dw, in, stream);
  if (db != nullptr)
    detail::column_reduce<1>(
        N, out, stream,
        [=] __device__(int n, int c) { return detail::Values<1>{{dy[int64_t{n} * out + c]}}; },
        [=] __device__(int c, const float* tot) { db[c] += tot[0]; });
}

}  // namespace zt::cuda
