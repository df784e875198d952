#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/common/dropout.h"
#include "kernels/common/softmax.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

// Causal self-attention, per (batch, head): S = Q K^T / sqrt(hd) on strided views of qkv
// (leading dimension 3C), a stable causal softmax per row (exact zeros right of the diagonal),
// then out = dropout(P) V. att keeps the undropped P.
//
// Dropout counter: att element (b, h, i, j) uses counter drop.offset + ((b*NH + h)*T + i)*T + j,
// its flat index in att [B,NH,T,T]; backward regenerates the same mask from (seed, offset). A
// caller that draws several masks from one stream advances offset by B*NH*T*T per call.
//
// Backward: dV = dropout(P)^T dY, dP = (dY V^T) * mask, dS = P (dP - rowsum(dP P)),
// dQ = dS K / sqrt(hd), dK = dS^T Q / sqrt(hd). The caller's scratch slice for the head holds
// dropout(P) (for dV) and then dP/dS, so backward allocates nothing in fp32.
//
// Half precision (T = bf16/fp16): the scores, the softmax and its backward run on an fp32 copy
// of the head's [T, T] block (a per-thread buffer, grown once); P, dropout(P) and dS are
// rounded to T once, as the operands of the T GEMMs (fp32 accumulation). In fp32 that copy is
// the att / scratch slice itself, so the fp32 path is the plain fp32 algorithm.
namespace zt::cpu {
namespace {

// Causal blocking: rows (and columns) are cut into kBlock-sized blocks and each GEMM touches
// only the blocks on or below the diagonal, which skips ~44% of the flops at T = 512.
constexpr int kBlock = 64;

struct Dims {
  int B, T, C, NH, hd;
  int64_t C3;   // row stride of qkv
  float scale;  // 1 / sqrt(hd)
};

int block_end(int i, int T) {
  const int e = (i / kBlock + 1) * kBlock;
  return e < T ? e : T;
}

// The fp32 [T, T] work block of a head: the T-typed slice itself in fp32, else a per-thread
// buffer in its own slot (the head also holds a slot-0 buffer while it is live).
constexpr int kWorkBlockSlot = 1;
template <typename T>
float* work_block(T* slice, size_t n) {
  if constexpr (std::is_same_v<T, float>) {
    return slice;
  } else {
    return detail::thread_buffer<float, kWorkBlockSlot>(n);
  }
}

// Row i of the dropped matrix: P[i, j] * mask for j <= i, zero up to the end of i's block (the
// diagonal-block GEMMs read those).
template <typename T>
void drop_row(T* dst, const T* p, int i, int T_, uint64_t base, const DropoutParams& drop_in) {
  const DropoutParams drop = drop_in;  // local: the stores cannot alias it
  for (int j = 0; j <= i; ++j)
    dst[j] = from_float<T>(dropout_apply(to_float(p[j]), drop, base + static_cast<uint64_t>(j)));
  const int e = block_end(i, T_);
  for (int j = i + 1; j < e; ++j) dst[j] = from_float<T>(0.0f);
}

// Rounds rows of the fp32 work block into T: each row up to the end of its diagonal block (what
// the GEMMs read), or the whole row.
template <typename T>
void round_rows(T* dst, const float* src, int T_, bool whole_rows) {
  if constexpr (!std::is_same_v<T, float>) {
    for (int i = 0; i < T_; ++i) {
      const int e = whole_rows ? T_ : block_end(i, T_);
      for (int j = 0; j < e; ++j)
        dst[int64_t{i} * T_ + j] = from_float<T>(src[int64_t{i} * T_ + j]);
    }
  }
}

template <typename T>
void forward_head(T* out, T* att, const T* qkv, const Dims& d, int bh, const DropoutParams& drop) {
  const int b = bh / d.NH, h = bh % d.NH, T_ = d.T;
  const int64_t TT = int64_t{T_} * T_;
  const T* q = qkv + int64_t{b} * T_ * d.C3 + int64_t{h} * d.hd;
  const T* k = q + d.C;
  const T* v = q + 2 * d.C;
  T* a = att + bh * TT;
  float* s = work_block(a, static_cast<size_t>(TT));
  T* o = out + int64_t{b} * T_ * d.C + int64_t{h} * d.hd;
  const int ld3 = static_cast<int>(d.C3);
  for (int r0 = 0; r0 < T_; r0 += kBlock) {
    const int r1 = r0 + kBlock < T_ ? r0 + kBlock : T_;
    gemm_t(false, true, r1 - r0, r1, d.hd, d.scale, q + r0 * d.C3, ld3, k, ld3, 0.0f,
           s + int64_t{r0} * T_, T_);
  }
  for (int i = 0; i < T_; ++i) softmax_causal_row(s + int64_t{i} * T_, i + 1, T_);
  round_rows(a, s, T_, true);
  const T* src = a;
  if (drop.p > 0.0f) {
    T* buf = detail::thread_buffer<T>(static_cast<size_t>(TT));
    for (int i = 0; i < T_; ++i)
      drop_row(buf + int64_t{i} * T_, a + int64_t{i} * T_, i, T_,
               static_cast<uint64_t>(bh * TT + int64_t{i} * T_), drop);
    src = buf;
  }
  for (int r0 = 0; r0 < T_; r0 += kBlock) {
    const int r1 = r0 + kBlock < T_ ? r0 + kBlock : T_;
    gemm_t(false, false, r1 - r0, d.hd, r1, 1.0f, src + int64_t{r0} * T_, T_, v, ld3, 0.0f,
           o + int64_t{r0} * d.C, d.C);
  }
}

template <typename T>
void backward_head(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, const Dims& d,
                   int bh, const DropoutParams& drop) {
  const int b = bh / d.NH, h = bh % d.NH, T_ = d.T;
  const int64_t TT = int64_t{T_} * T_;
  const int64_t qoff = int64_t{b} * T_ * d.C3 + int64_t{h} * d.hd;
  const T* q = qkv + qoff;
  const T* k = q + d.C;
  const T* v = q + 2 * d.C;
  T* dq = dqkv + qoff;
  T* dk = dq + d.C;
  T* dv = dq + 2 * d.C;
  const T* P = att + bh * TT;
  T* S = scratch + bh * TT;
  float* F = work_block(S, static_cast<size_t>(TT));
  const T* dy = dout + int64_t{b} * T_ * d.C + int64_t{h} * d.hd;
  const int ld3 = static_cast<int>(d.C3);
  const uint64_t base = static_cast<uint64_t>(bh * TT);

  // dV = dropout(P)^T dY, by column blocks (rows below the block's top only).
  const T* Ad = P;
  if (drop.p > 0.0f) {
    for (int i = 0; i < T_; ++i)
      drop_row(S + int64_t{i} * T_, P + int64_t{i} * T_, i, T_,
               base + static_cast<uint64_t>(i) * T_, drop);
    Ad = S;
  }
  for (int c0 = 0; c0 < T_; c0 += kBlock) {
    const int c1 = c0 + kBlock < T_ ? c0 + kBlock : T_;
    gemm_t(true, false, c1 - c0, d.hd, T_ - c0, 1.0f, Ad + int64_t{c0} * T_ + c0, T_,
           dy + int64_t{c0} * d.C, d.C, 0.0f, dv + c0 * d.C3, ld3);
  }
  // dAtt = dY V^T (in fp32; in fp32 runs it overwrites the dropped copy).
  for (int r0 = 0; r0 < T_; r0 += kBlock) {
    const int r1 = r0 + kBlock < T_ ? r0 + kBlock : T_;
    gemm_t(false, true, r1 - r0, r1, d.hd, 1.0f, dy + int64_t{r0} * d.C, d.C, v, ld3, 0.0f,
           F + int64_t{r0} * T_, T_);
  }
  // Through dropout and softmax: dS = P (dP - rowsum(dP P)), zero right of the diagonal.
  float* prow =
      std::is_same_v<T, float> ? nullptr : detail::thread_buffer<float>(static_cast<size_t>(T_));
  for (int i = 0; i < T_; ++i) {
    float* s = F + int64_t{i} * T_;
    if (drop.p > 0.0f) {
      const DropoutParams dl = drop;
      const uint64_t rb = base + static_cast<uint64_t>(i) * T_;
      for (int j = 0; j <= i; ++j) s[j] = dropout_apply(s[j], dl, rb + static_cast<uint64_t>(j));
    }
    const T* pr = P + int64_t{i} * T_;
    if constexpr (std::is_same_v<T, float>) {
      softmax_backward_row(s, pr, i + 1);
    } else {
      for (int j = 0; j <= i; ++j) prow[j] = to_float(pr[j]);
      softmax_backward_row(s, prow, i + 1);
    }
    const int e = block_end(i, T_);
    for (int j = i + 1; j < e; ++j) s[j] = 0.0f;
  }
  round_rows(S, F, T_, false);
  // dQ = dS K * scale, dK = dS^T Q * scale.
  for (int r0 = 0; r0 < T_; r0 += kBlock) {
    const int r1 = r0 + kBlock < T_ ? r0 + kBlock : T_;
    gemm_t(false, false, r1 - r0, d.hd, r1, d.scale, S + int64_t{r0} * T_, T_, k, ld3, 0.0f,
           dq + r0 * d.C3, ld3);
  }
  for (int c0 = 0; c0 < T_; c0 += kBlock) {
    const int c1 = c0 + kBlock < T_ ? c0 + kBlock : T_;
    gemm_t(true, false, c1 - c0, d.hd, T_ - c0, d.scale, S + int64_t{c0} * T_ + c0, T_,
           q + c0 * d.C3, ld3, 0.0f, dk + c0 * d.C3, ld3);
  }
}

Dims make_dims(int B, int T, int C, int NH) {
  ZT_CHECK(B > 0 && T > 0 && NH > 0 && C > 0 && C % NH == 0,
           "attention: bad shape B={} T={} C={} NH={}", B, T, C, NH);
  const int hd = C / NH;
  return Dims{B, T, C, NH, hd, 3 * int64_t{C}, 1.0f / std::sqrt(static_cast<float>(hd))};
}

}  // namespace

// Threading: one OpenMP loop over the B*NH heads, each head's GEMMs on single-threaded
// OpenBLAS and its softmax rows on the same thread. Measured on the 2-core box (B=4, T=512,
// C=512, NH=8, fwd/bwd): 10-13 / 17-20 ms, against 24-29 / 45-51 ms for a serial loop over
// heads with multi-threaded GEMMs and OpenMP softmax rows (250-520 ms when the box is loaded:
// the libgomp and OpenBLAS pools trade the two cores at every small GEMM). The result does not
// depend on the thread count: each head is computed by one thread, in a fixed order.
template <typename T>
void Kernels::attention_forward(T* out, T* att, std::type_identity_t<T>* /*scratch*/, const T* qkv,
                                int B, int Tn, int C, int NH, const DropoutParams& drop, Exec) {
  ZT_CHECK(drop.p >= 0.0f && drop.p < 1.0f, "attention: dropout p={} outside [0, 1)", drop.p);
  const Dims d = make_dims(B, Tn, C, NH);
  const int BH = B * NH;
  detail::BlasSingleThreaded single;
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < BH; ++bh) forward_head(out, att, qkv, d, bh, drop);
}

template <typename T>
void Kernels::attention_backward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att,
                                 int B, int Tn, int C, int NH, const DropoutParams& drop, Exec) {
  ZT_CHECK(drop.p >= 0.0f && drop.p < 1.0f, "attention: dropout p={} outside [0, 1)", drop.p);
  const Dims d = make_dims(B, Tn, C, NH);
  const int BH = B * NH;
  detail::BlasSingleThreaded single;
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < BH; ++bh) backward_head(dqkv, scratch, dout, qkv, att, d, bh, drop);
}

#define ZT_ATTENTION(T)                                                                        \
  template void Kernels::attention_forward<T>(T*, T*, T*, const T*, int, int, int, int,        \
                                              const DropoutParams&, Kernels::Exec);            \
  template void Kernels::attention_backward<T>(T*, T*, const T*, const T*, const T*, int, int, \
                                               int, int, const DropoutParams&, Kernels::Exec);
ZT_ATTENTION(float)
ZT_ATTENTION(bf16)
ZT_ATTENTION(fp16)
#undef ZT_ATTENTION

}  // namespace zt::cpu
