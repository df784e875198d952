#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/common/attention.h"
#include "kernels/common/reduce.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

// Flash-style causal self-attention on the CPU: the same algorithm as the CUDA kernel
// (kernels/cuda/attention.cu) and the element math of kernels/common/attention.h, on tiles.
//
// Forward, one task per (b, h, query block): for each key block up to the diagonal, S = Q K^T
// scale (kBq x kBk, fp32), the online softmax raises each row's max and rescales its fp32
// accumulator, and the dropped probabilities, as operands in T, go through the product with V
// into that accumulator; at the end out = acc / l and lse = m + log(l).
//
// Backward, one task per (b, h) (so dK, dV and dQ of a head are summed by one thread in a fixed
// order: deterministic whatever the thread count): D = rowsum(dO * O) per row, then per key
// block the panel of query rows from its diagonal down (the CUDA kernel walks that panel in
// query tiles): P = exp(S - lse), dV += dropout(P)^T dO, dP = dO V^T, dS = P (mask * dP - D),
// dK += dS^T Q scale, dQ += dS K scale.
//
// The products are cpu::Kernels::gemm on the strided views of qkv and dout in T with fp32
// results (oneDNN bf16 on AVX512-BF16, sgemm otherwise); the dropped probabilities and dS are
// rounded to T once as their operands, which is what the tensor-core kernel does, so the
// backends differ by fp32 summation order only. Row passes are split into plain loops
// (exponentials, then a fixed-order lane sum, then dropout) so they vectorise.
//
// Memory per thread: forward a kBq x kBk and a kBq x hd tile; backward four [T, kBk] panels
// (two fp32, two in T) and, in half precision, one [T, hd] fp32 dQ accumulator (fp32 runs
// accumulate dQ in place). Nothing of size T x T.
namespace zt::cpu {
namespace {

constexpr int kBq = 64;  // query rows per tile
constexpr int kBk = 64;  // keys per tile
// thread_buffer slots of this file (layernorm and cross-entropy use slot 0): fp32 tiles, and
// tiles of operands in T.
constexpr int kSlotF32 = 5;
constexpr int kSlotT = 6;

struct Dims {
  int B, T, C, NH, hd;
  int64_t C3;   // row stride of qkv
  float scale;  // 1 / sqrt(hd)
  int blocks_q() const { return (T + kBq - 1) / kBq; }
};

Dims make_dims(int B, int T, int C, int NH, const DropoutParams& drop) {
  ZT_CHECK(B > 0 && T > 0 && NH > 0 && C > 0 && C % NH == 0,
           "attention: bad shape B={} T={} C={} NH={}", B, T, C, NH);
  ZT_CHECK(drop.p >= 0.0f && drop.p < 1.0f, "attention: dropout p={} outside [0, 1)", drop.p);
  const int hd = C / NH;
  return Dims{B, T, C, NH, hd, 3 * int64_t{C}, 1.0f / std::sqrt(static_cast<float>(hd))};
}

// Carves consecutive blocks from one per-thread buffer of E.
template <typename E, int Slot>
class Carver {
 public:
  explicit Carver(size_t total) : p_(detail::thread_buffer<E, Slot>(total)) {}
  E* take(size_t n) {
    E* r = p_;
    p_ += n;
    return r;
  }

 private:
  E* p_;
};

template <typename T>
constexpr bool kHalf = !std::is_same_v<T, float>;

// Row r of a tile of query rows i0.. against keys j0..: how many keys are at or left of the
// diagonal (0 .. nk).
int live_keys(int i0, int r, int j0, int nk) {
  return std::clamp(i0 + r - j0 + 1, 0, nk);
}

// dst[j] = dropout(src[j]) as an operand in T for j < n (counters from ctr), 0 for n <= j < nk.
template <typename T>
void drop_row(T* dst, const float* src, int n, int nk, const DropoutParams& drop_in, uint64_t ctr) {
  const DropoutParams drop = drop_in;  // local: the stores cannot alias it
  if (drop.p > 0.0f) {
    for (int j = 0; j < n; ++j) dst[j] = from_float<T>(dropout_apply(src[j], drop, ctr + j));
  } else {
    for (int j = 0; j < n; ++j) dst[j] = from_float<T>(src[j]);
  }
  for (int j = n; j < nk; ++j) dst[j] = from_float<T>(0.0f);
}

template <typename T>
void forward_tile(T* out, float* lse, const T* qkv, const Dims& d, int bh, int qb,
                  const DropoutParams& drop) {
  const int b = bh / d.NH, h = bh % d.NH, hd = d.hd, ld3 = static_cast<int>(d.C3);
  const int i0 = qb * kBq, nq = std::min(kBq, d.T - i0), keys = i0 + nq;
  const T* q = qkv + int64_t{b} * d.T * d.C3 + int64_t{h} * hd;
  Carver<float, kSlotF32> cf(size_t(kBq) * kBk + size_t(kBq) * hd);
  float* S = cf.take(size_t(kBq) * kBk);
  float* O = cf.take(size_t(kBq) * hd);
  // The product's left operand: S itself in fp32 without dropout, else dropout(P) in T.
  const bool in_place = !kHalf<T> && drop.p == 0.0f;
  T* P = in_place ? nullptr : Carver<T, kSlotT>(size_t(kBq) * kBk).take(0);
  OnlineSoftmax st[kBq];
  std::fill(O, O + size_t(nq) * hd, 0.0f);
  for (int j0 = 0; j0 < keys; j0 += kBk) {
    const int nk = std::min(kBk, keys - j0);
    gemm_t(false, true, nq, nk, hd, d.scale, q + i0 * d.C3, ld3, q + d.C + j0 * d.C3, ld3, 0.0f, S,
           kBk);
    for (int r = 0; r < nq; ++r) {
      float* s = S + int64_t{r} * kBk;
      float* o = O + int64_t{r} * hd;
      const int n = live_keys(i0, r, j0, nk);
      float mx = kMaskedScore;
      for (int j = 0; j < n; ++j) mx = s[j] > mx ? s[j] : mx;
      const float alpha = online_softmax_raise(st[r], mx);
      if (alpha != 1.0f)
        for (int e = 0; e < hd; ++e) o[e] *= alpha;
      const float m = st[r].m;
      for (int j = 0; j < n; ++j) s[j] = online_softmax_prob(s[j], m);
      st[r].l += lane_sum(s, n);
      if (in_place) {
        for (int j = n; j < nk; ++j) s[j] = 0.0f;
      } else {
        drop_row(P + int64_t{r} * kBk, s, n, nk, drop, attention_counter(bh, d.T, i0 + r, j0));
      }
    }
    if constexpr (!kHalf<T>) {
      if (in_place) {
        gemm(false, false, nq, hd, nk, 1.0f, S, kBk, q + 2 * d.C + j0 * d.C3, ld3, 1.0f, O, hd);
        continue;
      }
    }
    gemm_t(false, false, nq, hd, nk, 1.0f, P, kBk, q + 2 * d.C + j0 * d.C3, ld3, 1.0f, O, hd);
  }
  T* o = out + (int64_t{b} * d.T + i0) * d.C + int64_t{h} * hd;
  for (int r = 0; r < nq; ++r) {
    const float inv = 1.0f / st[r].l;
    for (int e = 0; e < hd; ++e)
      o[int64_t{r} * d.C + e] = from_float<T>(O[int64_t{r} * hd + e] * inv);
    lse[int64_t{bh} * d.T + i0 + r] = online_softmax_lse(st[r]);
  }
}

template <typename T>
void backward_head(T* dqkv, float* delta, const T* dout, const T* qkv, const T* out,
                   const float* lse, const Dims& d, int bh, const DropoutParams& drop) {
  const int b = bh / d.NH, h = bh % d.NH, hd = d.hd, T_ = d.T, ld3 = static_cast<int>(d.C3);
  const int64_t qoff = int64_t{b} * T_ * d.C3 + int64_t{h} * hd;
  const int64_t ooff = int64_t{b} * T_ * d.C + int64_t{h} * hd;
  const T* q = qkv + qoff;
  const T* k = q + d.C;
  const T* v = q + 2 * d.C;
  const T* dy = dout + ooff;
  T* dq = dqkv + qoff;
  const float* L = lse + int64_t{bh} * T_;
  float* D = delta + int64_t{bh} * T_;
  // D_i = rowsum(dO * O): the rowsum(dP * P) of the softmax backward (with or without dropout).
  for (int i = 0; i < T_; ++i) {
    float acc = 0.0f;
    for (int e = 0; e < hd; ++e)
      acc += to_float(dy[int64_t{i} * d.C + e]) * to_float(out[ooff + int64_t{i} * d.C + e]);
    D[i] = acc;
  }
  // A key block meets every query row from its diagonal down in one panel: a few large products
  // per key block instead of five per 64 x 64 tile (oneDNN's per-call cost dominated those).
  const size_t tile = size_t(T_) * kBk;
  Carver<float, kSlotF32> cf(2 * tile + 2 * size_t(kBk) * hd + (kHalf<T> ? size_t(T_) * hd : 0));
  float* P = cf.take(tile);   // probabilities
  float* dS = cf.take(tile);  // dP, then dS
  float* dK = cf.take(size_t(kBk) * hd);
  float* dV = cf.take(size_t(kBk) * hd);
  // dQ accumulates in fp32: in place in fp32 runs, else in a [T, hd] buffer.
  float* dQ = cf.take(kHalf<T> ? size_t(T_) * hd : 0);
  int ldq = hd;
  if constexpr (!kHalf<T>) {
    dQ = dq;
    ldq = ld3;
  }
  // Operands in T: dropout(P) and dS (fp32 runs use the fp32 tiles where nothing changes).
  Carver<T, kSlotT> ct(2 * tile);
  T* Pd = ct.take(tile);
  T* dSt = ct.take(tile);
  for (int i = 0; i < T_; ++i) std::fill(dQ + int64_t{i} * ldq, dQ + int64_t{i} * ldq + hd, 0.0f);
  for (int j0 = 0; j0 < T_; j0 += kBk) {
    const int nk = std::min(kBk, T_ - j0);
    std::fill(dK, dK + size_t(kBk) * hd, 0.0f);
    std::fill(dV, dV + size_t(kBk) * hd, 0.0f);
    {
      const int i0 = j0, nq = T_ - j0;  // the query rows that see this key block
      gemm_t(false, true, nq, nk, hd, d.scale, q + i0 * d.C3, ld3, k + j0 * d.C3, ld3, 0.0f, P,
             kBk);
      for (int r = 0; r < nq; ++r) {
        float* p = P + int64_t{r} * kBk;
        const int n = live_keys(i0, r, j0, nk);
        const float l = L[i0 + r];
        for (int j = 0; j < n; ++j) p[j] = online_softmax_prob(p[j], l);
        for (int j = n; j < nk; ++j) p[j] = 0.0f;
        if (kHalf<T> || drop.p > 0.0f)
          drop_row(Pd + int64_t{r} * kBk, p, n, nk, drop, attention_counter(bh, T_, i0 + r, j0));
      }
      const bool plain = !kHalf<T> && drop.p == 0.0f;  // dropout(P) = P, already fp32
      if constexpr (!kHalf<T>) {
        if (plain) gemm(true, false, nk, hd, nq, 1.0f, P, kBk, dy + i0 * d.C, d.C, 1.0f, dV, hd);
      }
      if (!plain) gemm_t(true, false, nk, hd, nq, 1.0f, Pd, kBk, dy + i0 * d.C, d.C, 1.0f, dV, hd);
      gemm_t(false, true, nq, nk, hd, 1.0f, dy + i0 * d.C, d.C, v + j0 * d.C3, ld3, 0.0f, dS, kBk);
      for (int r = 0; r < nq; ++r) {
        const float* p = P + int64_t{r} * kBk;
        float* g = dS + int64_t{r} * kBk;
        const int n = live_keys(i0, r, j0, nk);
        const float dl = D[i0 + r];
        if (drop.p > 0.0f) {
          const DropoutParams dr = drop;
          const uint64_t ctr = attention_counter(bh, T_, i0 + r, j0);
          for (int j = 0; j < n; ++j) g[j] = attention_dscore(p[j], g[j], dl, dr, ctr + j);
        } else {
          for (int j = 0; j < n; ++j) g[j] = attention_dscore(p[j], g[j], dl);
        }
        for (int j = n; j < nk; ++j) g[j] = 0.0f;
        if constexpr (kHalf<T>)
          for (int j = 0; j < nk; ++j) dSt[int64_t{r} * kBk + j] = from_float<T>(g[j]);
      }
      if constexpr (kHalf<T>) {
        gemm_t(true, false, nk, hd, nq, d.scale, dSt, kBk, q + i0 * d.C3, ld3, 1.0f, dK, hd);
        gemm_t(false, false, nq, hd, nk, d.scale, dSt, kBk, k + j0 * d.C3, ld3, 1.0f,
               dQ + int64_t{i0} * ldq, ldq);
      } else {
        gemm(true, false, nk, hd, nq, d.scale, dS, kBk, q + i0 * d.C3, ld3, 1.0f, dK, hd);
        gemm(false, false, nq, hd, nk, d.scale, dS, kBk, k + j0 * d.C3, ld3, 1.0f,
             dQ + int64_t{i0} * ldq, ldq);
      }
    }
    T* dk = dq + d.C + j0 * d.C3;
    T* dv = dq + 2 * d.C + j0 * d.C3;
    for (int r = 0; r < nk; ++r)
      for (int e = 0; e < hd; ++e) {
        dk[r * d.C3 + e] = from_float<T>(dK[int64_t{r} * hd + e]);
        dv[r * d.C3 + e] = from_float<T>(dV[int64_t{r} * hd + e]);
      }
  }
  if constexpr (kHalf<T>) {
    for (int i = 0; i < T_; ++i)
      for (int e = 0; e < hd; ++e) dq[i * d.C3 + e] = from_float<T>(dQ[int64_t{i} * hd + e]);
  }
}

}  // namespace

// Threading: OpenMP over the tasks, each task's sgemms single-threaded (a parallel OpenBLAS
// inside an OpenMP loop would fight it for the cores). Forward's tasks differ in size (a query
// block attends to its prefix), so they are handed out dynamically; each result is computed by
// one thread in a fixed order, so neither backend result depends on the schedule.
template <typename T>
void Kernels::attention_forward(T* out, float* lse, const T* qkv, int B, int Tn, int C, int NH,
                                const DropoutParams& drop, Exec) {
  const Dims d = make_dims(B, Tn, C, NH, drop);
  const int nb = d.blocks_q(), tasks = B * NH * nb;
  detail::BlasSingleThreaded single;
#pragma omp parallel for schedule(dynamic)
  for (int t = 0; t < tasks; ++t) {
    // Largest blocks first: the long tasks start early and the short ones fill the tail.
    const int qb = nb - 1 - t / (B * NH), bh = t % (B * NH);
    forward_tile(out, lse, qkv, d, bh, qb, drop);
  }
}

template <typename T>
void Kernels::attention_backward(T* dqkv, float* delta, const T* dout, const T* qkv, const T* out,
                                 const float* lse, int B, int Tn, int C, int NH,
                                 const DropoutParams& drop, Exec) {
  const Dims d = make_dims(B, Tn, C, NH, drop);
  const int BH = B * NH;
  detail::BlasSingleThreaded single;
#pragma omp parallel for schedule(dynamic)
  for (int bh = 0; bh < BH; ++bh) backward_head(dqkv, delta, dout, qkv, out, lse, d, bh, drop);
}

#define ZT_ATTENTION(T)                                                                  \
  template void Kernels::attention_forward<T>(T*, float*, const T*, int, int, int, int,  \
                                              const DropoutParams&, Kernels::Exec);      \
  template void Kernels::attention_backward<T>(T*, float*, const T*, const T*, const T*, \
                                               const float*, int, int, int, int,         \
                                               const DropoutParams&, Kernels::Exec);
ZT_ATTENTION(float)
ZT_ATTENTION(bf16)
ZT_ATTENTION(fp16)
#undef ZT_ATTENTION

}  // namespace zt::cpu
