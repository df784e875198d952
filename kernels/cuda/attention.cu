// Causal self-attention on cuBLAS strided-batched GEMMs plus fused softmax kernels; the same
// layouts, scale and dropout counters as kernels/cpu/attention.cpp.
//
// qkv [B,T,3C] is read in place: for batch b, head h's Q, K and V are [T, hd] views with row
// stride 3C starting at b*T*3C + h*hd (+ C, + 2C), so one strided-batched GEMM per batch row b
// covers its NH heads (head stride hd) and no permute is needed. GEMMs run over the full T x T
// (the upper triangle of att is exactly 0, so the products are the causal ones).
//
// Dropout: att element (b, h, i, j) uses counter drop.offset + ((b*NH + h)*T + i)*T + j, as on
// the CPU, so the masks agree bit for bit. att keeps the undropped P; forward multiplies V by
// dropout(P), which it writes to scratch (B*NH*T*T floats, only when drop.p > 0). Backward uses
// its scratch for dropout(P) (for dV) and then dP/dS.
//
// Half precision (T = bf16/fp16): the GEMMs take T operands with fp32 accumulation and write T,
// so the scores and dP are rounded to T before the fp32 softmax and its backward (as Megatron's
// non-flash path does); the CPU backend keeps those two in fp32, so the backends differ by
// those roundings in half precision.
#include <cmath>
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <type_traits>

#include "kernels/common/dropout.h"
#include "kernels/common/math.h"
#include "kernels/common/softmax.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

constexpr int kRowThreads = 256;
using BlockReduce = cub::BlockReduce<float, kRowThreads>;

struct MaxOp {
  __device__ float operator()(float a, float b) const { return b > a ? b : a; }
};

struct Dims {
  int B, T, C, NH, hd;
  int64_t C3, TT;
  float scale;
};

// Row r = (b*NH + h)*T + i of att: scores in [0, i], overwritten with the causal softmax and
// zeros right of the diagonal; with dropout, the dropped row goes to `dropped`.
template <typename E>
__global__ void softmax_forward_kernel(E* att, E* dropped, int T, DropoutParams drop) {
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ float s_val;
  const int64_t r = blockIdx.x;
  const int i = static_cast<int>(r % T);
  E* row = att + r * T;
  float mx = to_float(row[0]);
  for (int j = threadIdx.x; j <= i; j += kRowThreads) {
    const float x = to_float(row[j]);
    mx = x > mx ? x : mx;
  }
  mx = BlockReduce(tmp).Reduce(mx, MaxOp{});
  if (threadIdx.x == 0) s_val = mx;
  __syncthreads();
  mx = s_val;
  float acc = 0.0f;
  for (int j = threadIdx.x; j <= i; j += kRowThreads) {
    const float e = exp_f32(to_float(row[j]) - mx);
    if constexpr (std::is_same_v<E, float>) row[j] = e;
    acc += e;
  }
  const float sum = BlockReduce(tmp).Sum(acc);
  __syncthreads();
  if (threadIdx.x == 0) s_val = 1.0f / sum;
  __syncthreads();
  const float inv = s_val;
  const uint64_t base = static_cast<uint64_t>(r) * static_cast<uint64_t>(T);
  for (int j = threadIdx.x; j < T; j += kRowThreads) {
    float p = 0.0f;
    if (j <= i) {
      if constexpr (std::is_same_v<E, float>)
        p = row[j] * inv;
      else
        p = to_float(from_float<E>(exp_f32(to_float(row[j]) - mx) * inv));  // P as stored
    }
    row[j] = from_float<E>(p);
    if (dropped != nullptr)
      dropped[r * T + j] =
          from_float<E>(j <= i ? dropout_apply(p, drop, base + static_cast<uint64_t>(j)) : 0.0f);
  }
}

// Row r of s holds dP = dY V^T; on return dS = P (dropout'(dP) - rowsum(...)), 0 right of the
// diagonal.
template <typename E>
__global__ void softmax_backward_kernel(E* s, const E* att, int T, DropoutParams drop) {
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ float s_dot;
  const int64_t r = blockIdx.x;
  const int i = static_cast<int>(r % T);
  E* row = s + r * T;
  const E* p = att + r * T;
  const uint64_t base = static_cast<uint64_t>(r) * static_cast<uint64_t>(T);
  float acc = 0.0f;
  for (int j = threadIdx.x; j <= i; j += kRowThreads) {
    float d = to_float(row[j]);
    if (drop.p > 0.0f) {
      d = dropout_apply(d, drop, base + static_cast<uint64_t>(j));
      if constexpr (std::is_same_v<E, float>) row[j] = d;  // read back by this same thread below
    }
    acc += d * to_float(p[j]);
  }
  const float dot = BlockReduce(tmp).Sum(acc);
  if (threadIdx.x == 0) s_dot = dot;
  __syncthreads();
  const float dt = s_dot;
  for (int j = threadIdx.x; j < T; j += kRowThreads) {
    float d = 0.0f;
    if (j <= i) {
      d = to_float(row[j]);
      // Half: the dropped dP was not stored (it would round twice); apply the mask again.
      if (!std::is_same_v<E, float> && drop.p > 0.0f)
        d = dropout_apply(d, drop, base + static_cast<uint64_t>(j));
    }
    row[j] = from_float<E>(j <= i ? softmax_backward_elem(d, to_float(p[j]), dt) : 0.0f);
  }
}

Dims make_dims(int B, int T, int C, int NH, const DropoutParams& drop) {
  ZT_CU_CHECK(B > 0 && T > 0 && NH > 0 && C > 0 && C % NH == 0,
              cat("attention: bad shape B=", B, " T=", T, " C=", C, " NH=", NH));
  ZT_CU_CHECK(drop.p >= 0.0f && drop.p < 1.0f,
              cat("attention: dropout p=", drop.p, " outside [0, 1)"));
  const int hd = C / NH;
  return Dims{
      B, T, C, NH, hd, 3 * int64_t{C}, int64_t{T} * T, 1.0f / std::sqrt(static_cast<float>(hd))};
}

// One strided-batched GEMM per batch row b over its NH heads. a/b/c_off(b) give the batch row's
// base pointers; head strides are sa, sb, sc. fp32: cublasSgemmStridedBatched as before; half:
// the Ex form on half operands with fp32 accumulation.
template <typename AOff, typename BOff, typename COff>
void per_batch(const Dims& d, bool ta, bool tb, int M, int N, int K, float alpha, AOff a, int lda,
               int64_t sa, BOff bm, int ldb, int64_t sb, COff c, int ldc, int64_t sc,
               cudaStream_t stream) {
  using E = std::remove_cv_t<std::remove_pointer_t<decltype(c(0))>>;
  for (int b = 0; b < d.B; ++b) {
    if constexpr (std::is_same_v<E, float>)
      gemm_strided_batched(ta, tb, M, N, K, alpha, a(b), lda, sa, bm(b), ldb, sb, 0.0f, c(b), ldc,
                           sc, d.NH, stream);
    else
      gemm_strided_batched_ex(ta, tb, M, N, K, alpha, a(b), lda, sa, bm(b), ldb, sb, 0.0f, c(b),
                              ldc, sc, d.NH, dtype_of<E>(), dtype_of<E>(), stream);
  }
}

}  // namespace
}  // namespace detail

int64_t attention_forward_scratch_floats(int B, int T, int NH, const DropoutParams& drop) {
  return drop.p > 0.0f ? int64_t{B} * NH * T * T : 0;
}

template <typename E>
void Kernels::attention_forward(E* out, E* att, std::type_identity_t<E>* scratch, const E* qkv,
                                int B, int T, int C, int NH, const DropoutParams& drop,
                                cudaStream_t stream) {
  // fp32 without the caller's scratch: the kernels' own grow-only buffer (kernels/cuda/context.h).
  if constexpr (std::is_same_v<E, float>) {
    const int64_t n = attention_forward_scratch_floats(B, T, NH, drop);
    if (scratch == nullptr && n > 0)
      scratch = static_cast<float*>(detail::scratch(
          detail::Scratch::Attention, sizeof(float) * static_cast<size_t>(n), stream));
  }
  const detail::Dims d = detail::make_dims(B, T, C, NH, drop);
  ZT_CU_CHECK(drop.p == 0.0f || scratch != nullptr,
              std::string("attention_forward: dropout needs scratch"));
  const int ld3 = static_cast<int>(d.C3);
  const auto q = [&](int b) { return qkv + int64_t{b} * T * d.C3; };
  const auto k = [&](int b) { return q(b) + C; };
  const auto v = [&](int b) { return q(b) + 2 * C; };
  const auto a = [&](int b) { return att + int64_t{b} * NH * d.TT; };
  // S = Q K^T / sqrt(hd)
  detail::per_batch(d, false, true, T, T, d.hd, d.scale, q, ld3, d.hd, k, ld3, d.hd, a, T, d.TT,
                    stream);
  E* dropped = drop.p > 0.0f ? scratch : nullptr;
  detail::softmax_forward_kernel<<<B * NH * T, detail::kRowThreads, 0, stream>>>(att, dropped, T,
                                                                                 drop);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
  // out = dropout(P) V
  const E* src = dropped != nullptr ? dropped : att;
  const auto s = [&](int b) { return src + int64_t{b} * NH * d.TT; };
  const auto o = [&](int b) { return out + int64_t{b} * T * C; };
  detail::per_batch(d, false, false, T, d.hd, T, 1.0f, s, T, d.TT, v, ld3, d.hd, o, C, d.hd,
                    stream);
}

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       const DropoutParams& drop, cudaStream_t stream) {
  Kernels::attention_forward(out, att, nullptr, qkv, B, T, C, NH, drop, stream);
}

template <typename E>
void Kernels::attention_backward(E* dqkv, E* scratch, const E* dout, const E* qkv, const E* att,
                                 int B, int T, int C, int NH, const DropoutParams& drop,
                                 cudaStream_t stream) {
  const detail::Dims d = detail::make_dims(B, T, C, NH, drop);
  const int ld3 = static_cast<int>(d.C3);
  const auto q = [&](int b) { return qkv + int64_t{b} * T * d.C3; };
  const auto k = [&](int b) { return q(b) + C; };
  const auto v = [&](int b) { return q(b) + 2 * C; };
  const auto dq = [&](int b) { return dqkv + int64_t{b} * T * d.C3; };
  const auto dk = [&](int b) { return dq(b) + C; };
  const auto dv = [&](int b) { return dq(b) + 2 * C; };
  const auto dy = [&](int b) { return dout + int64_t{b} * T * C; };
  const auto p = [&](int b) { return att + int64_t{b} * NH * d.TT; };
  const auto s = [&](int b) { return scratch + int64_t{b} * NH * d.TT; };
  const auto sc = [&](int b) -> const E* { return s(b); };
  // dV = dropout(P)^T dY
  if (drop.p > 0.0f) {
    detail::for_each(int64_t{B} * NH * d.TT, stream, [=] __device__(int64_t i) {
      scratch[i] = from_float<E>(dropout_apply(to_float(att[i]), drop, static_cast<uint64_t>(i)));
    });
    detail::per_batch(d, true, false, T, d.hd, T, 1.0f, sc, T, d.TT, dy, C, d.hd, dv, ld3, d.hd,
                      stream);
  } else {
    detail::per_batch(d, true, false, T, d.hd, T, 1.0f, p, T, d.TT, dy, C, d.hd, dv, ld3, d.hd,
                      stream);
  }
  // dP = dY V^T, then through dropout and softmax in place.
  detail::per_batch(d, false, true, T, T, d.hd, 1.0f, dy, C, d.hd, v, ld3, d.hd, s, T, d.TT,
                    stream);
  detail::softmax_backward_kernel<<<B * NH * T, detail::kRowThreads, 0, stream>>>(scratch, att, T,
                                                                                  drop);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
  // dQ = dS K / sqrt(hd), dK = dS^T Q / sqrt(hd)
  detail::per_batch(d, false, false, T, d.hd, T, d.scale, sc, T, d.TT, k, ld3, d.hd, dq, ld3, d.hd,
                    stream);
  detail::per_batch(d, true, false, T, d.hd, T, d.scale, sc, T, d.TT, q, ld3, d.hd, dk, ld3, d.hd,
                    stream);
}

#define ZT_ATTENTION(E)                                                                        \
  template void Kernels::attention_forward<E>(E*, E*, E*, const E*, int, int, int, int,        \
                                              const DropoutParams&, cudaStream_t);             \
  template void Kernels::attention_backward<E>(E*, E*, const E*, const E*, const E*, int, int, \
                                               int, int, const DropoutParams&, cudaStream_t);
ZT_ATTENTION(float)
ZT_ATTENTION(bf16)
ZT_ATTENTION(fp16)
#undef ZT_ATTENTION

}  // namespace zt::cuda
