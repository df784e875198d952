#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include <omp.h>

#include "kernels/backend_memory.h"
#include "kernels/common/attention.h"
#include "kernels/common/reduce.h"
#include "kernels/cpu/gemm_mixed.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

// Flash-style causal self-attention on the CPU: the same algorithm as the CUDA kernel
// (kernels/cuda/attention.cu) and the element math of kernels/common/attention.h, on tiles.
// The per-tile path below runs whole sequences and ring attention's blocks alike: an
// AttentionBlock places the query rows and the keys in the sequence (the mask and the dropout
// counters by position), AttentionOperands and AttentionGrads say where they and the gradients
// are; a block's output merges into an fp32 running result, its gradients add to fp32 buffers.
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
//
// bf16 where oneDNN runs it (AVX512-BF16, AMX) takes the batched path instead. Per (b, h) the
// tiles are a few microseconds of work each, and as strided views of qkv oneDNN 2.6 runs them
// on its generic gemm:jit kernel rather than brgemm (AMX's kernels among them): one 64x64x64
// call per tile cost most of a bf16 step. The batched path takes a group of key/value heads at a
// time, with their query heads: q (and dout) of the group are copied once into
// [T][rep][heads][hd] (the rows of all heads interleaved, the dense layout oneDNN's brgemm takes
// batched; the rep query heads that share a key/value head are rows of its problem, so no key or
// value is repeated), each key block's k and v into [kBk][heads][hd], and each product of the
// algorithm above becomes one oneDNN primitive over every key/value head of the group and up to
// kRowChunk positions from the block's diagonal down (gemm_onednn_interleaved). Key blocks are the
// outer loop in both directions: forward keeps the online-softmax statistics and an fp32 output
// accumulator for every row of the group, backward the fp32 dQ accumulator, and dK, dV of the block
// accumulate over the row chunks. The row passes are the same element math in the same order per
// row, so only the products' summation order differs from the per-tile path. T is padded to a whole
// key block with zero rows (their scores are masked, their probabilities 0). Each group is one
// thread's work from start to end (oneDNN runs single-threaded inside the parallel loop: one
// parallel region per call, as above, which matters when the cores are oversubscribed), and the
// grouping does not depend on the thread count, so neither do the bits. Memory per group
// (kBatchedGroupBytes bounds it unless a single key/value head needs more): O(T rep (hd + 1)) per
// key/value head for the packed rows and accumulators plus kRowChunk rep x kBk panels, nothing of
// size T x T.
//
// Where the buffers live: a task's fp32 blocks and then its blocks in T are one region of the
// running thread's slice of the KernelScratch bound to the calling thread (the model takes it
// from its MemoryPool, sized by cpu_attention_scratch_per_thread, the same Need as the tasks
// carve); with none bound (kernel tests, generation) a per-thread heap buffer of that size.
namespace zt {
namespace {
// The calling thread's binding (ScopedKernelScratch).
thread_local KernelScratch t_scratch;
}  // namespace

ScopedKernelScratch::ScopedKernelScratch(const KernelScratch& s) : prev_(t_scratch) {
  t_scratch = s;
}
ScopedKernelScratch::~ScopedKernelScratch() {
  t_scratch = prev_;
}

namespace cpu {
namespace {

constexpr int kBq = 64;  // query rows per tile
constexpr int kBk = 64;  // keys per tile
// The thread_buffer slot of this file's unbound scratch (layernorm and cross-entropy use 0).
constexpr int kSlot = 5;
// The batched path: query rows per product (a multiple of kBk, so the products take at most
// kRowChunk / kBk row counts and oneDNN's primitive cache holds them all whatever T is), and the
// bound of one group's buffers (both slots) unless one head alone needs more.
constexpr int kRowChunk = 4 * kBk;
constexpr size_t kBatchedGroupBytes = size_t{4} << 20;
constexpr int kMinGroups = 4;

struct Dims {
  int B, T, C, NH, hd;
  int64_t C3;   // row stride of qkv: C + 2 Ckv
  float scale;  // 1 / sqrt(hd)
  int NKV;      // key/value heads
  int64_t Ckv;  // NKV * hd
  // The per-tile path's block of each sample (the whole sequence but for attention_block_*).
  AttentionBlock blk;
  int blocks_q() const { return (blk.Tq + kBq - 1) / kBq; }
  int rep() const { return NH / NKV; }                             // query heads per key/value head
  int64_t kv_col(int h) const { return int64_t{h / rep()} * hd; }  // in a k (or v) row
};

Dims make_dims(int B, int T, int C, int NH, int NKV, const DropoutParams& drop) {
  ZT_CHECK(B > 0 && T > 0 && NH > 0 && C > 0 && C % NH == 0 && NKV > 0 && NH % NKV == 0,
           "attention: bad shape B={} T={} C={} NH={} NKV={}", B, T, C, NH, NKV);
  ZT_CHECK(drop.p >= 0.0f && drop.p < 1.0f, "attention: dropout p={} outside [0, 1)", drop.p);
  const int hd = C / NH;
  const int64_t ckv = int64_t{NKV} * hd, c3 = int64_t{C} + 2 * ckv;
  return Dims{B,
              T,
              C,
              NH,
              hd,
              c3,
              1.0f / std::sqrt(static_cast<float>(hd)),
              NKV,
              ckv,
              AttentionBlock::whole(T, c3)};
}

// A block's dims (one sample; its rows are Tq for the tile loops).
Dims block_dims(int C, int NH, int NKV, const AttentionBlock& blk, const DropoutParams& drop) {
  Dims d = make_dims(1, blk.Tq, C, NH, NKV, drop);
  ZT_CHECK(blk.valid(C, d.Ckv),
           "attention block: bad placement Tq={} Tk={} q_pos={} k_pos={} seq={} ld_lse={} ldq={} "
           "ldkv={}",
           blk.Tq, blk.Tk, blk.q_pos, blk.k_pos, blk.seq, blk.ld_lse, blk.ldq, blk.ldkv);
  d.blk = blk;
  return d;
}

template <typename T>
constexpr bool kHalf = !std::is_same_v<T, float>;

// The calling thread's binding, for its team's tasks (slices by omp_get_thread_num). A call from
// inside a parallel region would run in a nested team whose thread numbers repeat across the
// outer threads: it takes heap buffers instead.
KernelScratch bound_scratch() {
  return omp_in_parallel() ? KernelScratch{} : t_scratch;
}

// One task's scratch in elements: fp32 blocks, then blocks in T.
struct Need {
  size_t f32 = 0, t = 0;
  size_t bytes(size_t t_size) const { return align(f32 * sizeof(float)) + t * t_size; }
  static size_t align(size_t b) { return (b + 63) / 64 * 64; }
};

// Before the parallel region (an exception cannot leave one): a bound scratch must hold `bytes`
// per task and have a slice for every thread of the team.
void check_scratch(const KernelScratch& ks, size_t bytes) {
  ZT_CHECK(ks.base == nullptr || (bytes <= ks.per_thread && omp_get_max_threads() <= ks.threads),
           "attention: {} threads need {} bytes of scratch each; {} threads of {} bytes are bound",
           omp_get_max_threads(), bytes, ks.threads, ks.per_thread);
}

// Carves a task's blocks from the running thread's scratch: the fp32 blocks from the start, the
// blocks in T after Need::f32 (64-byte aligned).
template <typename T>
class Carver {
 public:
  Carver(const KernelScratch& ks, const Need& need) {
    const size_t bytes = need.bytes(sizeof(T));
    if (ks.base == nullptr) {
      base_ = detail::thread_buffer<unsigned char, kSlot>(bytes);
    } else {  // check_scratch() has checked the fit, on the calling thread
      base_ = static_cast<unsigned char*>(ks.base) + size_t(omp_get_thread_num()) * ks.per_thread;
    }
    f_ = reinterpret_cast<float*>(base_);
    t_ = reinterpret_cast<T*>(base_ + Need::align(need.f32 * sizeof(float)));
  }
  float* f32(size_t n) { return std::exchange(f_, f_ + n); }
  T* t(size_t n) { return std::exchange(t_, t_ + n); }

 private:
  unsigned char* base_ = nullptr;
  float* f_ = nullptr;
  T* t_ = nullptr;
};

// A query row's result from its fp32 accumulator `acc` (the unnormalised output) and softmax
// state: y (hd values) = acc / l and L = lse, or with `merge` the row merged into the running
// y and L (attention_merge). A row that saw no key: 0 and -inf, or (merging) unchanged.
template <typename U>
void finish_row(U* y, float& L, const float* acc, const OnlineSoftmax& st, int hd, bool merge) {
  if (!merge) {
    const float inv = st.l > 0.0f ? 1.0f / st.l : 0.0f;
    for (int e = 0; e < hd; ++e) y[e] = from_float<U>(acc[e] * inv);
    L = st.l > 0.0f ? online_softmax_lse(st) : kMaskedScore;
    return;
  }
  if (st.l == 0.0f) return;
  const AttentionMerge w = attention_merge(L, online_softmax_lse(st));
  const float take = w.take / st.l;
  for (int e = 0; e < hd; ++e) y[e] = from_float<U>(to_float(y[e]) * w.keep + acc[e] * take);
}

// dst (hd values) = src, or with `add` dst += src (fp32 sums, rounded once to G).
template <typename G>
void store_row(G* dst, const float* src, int hd, bool add) {
  for (int e = 0; e < hd; ++e) dst[e] = from_float<G>(add ? to_float(dst[e]) + src[e] : src[e]);
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

// forward_tile: S and the output accumulator; the dropped probabilities.
Need tile_forward_need(const Dims& d) {
  return {size_t(kBq) * kBk + size_t(kBq) * d.hd, size_t(kBq) * kBk};
}

// backward_kv_head: P, dS, dK, dV and (half) the dQ accumulators of its rep() query heads;
// dropout(P) and dS in T.
Need head_backward_need(const Dims& d, bool half) {
  const size_t rows = size_t(d.blk.Tq), tile = rows * kBk;
  return {2 * tile + 2 * size_t(kBk) * d.hd + (half ? rows * d.hd * d.rep() : 0), 2 * tile};
}

// Query block qb of head bh = b·NH + h against the keys it sees. U = T: out [B, Tq, C] and lse
// [B·NH, ld_lse] are written; U = float with `merge`: they hold a running result the block is
// merged into (attention_block_forward).
template <typename T, typename U>
void forward_tile(U* out, float* lse, const AttentionOperands<T>& x, const Dims& d, int bh, int qb,
                  const DropoutParams& drop, const KernelScratch& ks, bool merge) {
  const AttentionBlock& k = d.blk;
  const int b = bh / d.NH, h = bh % d.NH, hd = d.hd;
  const int ldq = static_cast<int>(k.ldq), ldkv = static_cast<int>(k.ldkv);
  const int i0 = qb * kBq, nq = std::min(kBq, k.Tq - i0), keys = k.keys(i0 + nq);
  const T* q = x.q + b * x.batch_q + int64_t{h} * hd + int64_t{i0} * ldq;
  const T* kh = x.k + b * x.batch_kv + d.kv_col(h);
  const T* vh = x.v + b * x.batch_kv + d.kv_col(h);
  Carver<T> cv(ks, tile_forward_need(d));
  float* S = cv.f32(size_t(kBq) * kBk);
  float* O = cv.f32(size_t(kBq) * hd);
  // The product's left operand: S itself in fp32 without dropout, else dropout(P) in T.
  const bool in_place = !kHalf<T> && drop.p == 0.0f;
  T* P = in_place ? nullptr : cv.t(size_t(kBq) * kBk);
  OnlineSoftmax st[kBq];
  std::fill(O, O + size_t(nq) * hd, 0.0f);
  for (int j0 = 0; j0 < keys; j0 += kBk) {
    const int nk = std::min(kBk, keys - j0);
    gemm_t(false, true, nq, nk, hd, d.scale, q, ldq, kh + int64_t{j0} * ldkv, ldkv, 0.0f, S, kBk);
    for (int r = 0; r < nq; ++r) {
      float* s = S + int64_t{r} * kBk;
      float* o = O + int64_t{r} * hd;
      const int n = k.live(i0 + r, j0, nk);
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
        drop_row(P + int64_t{r} * kBk, s, n, nk, drop, k.counter(bh, i0 + r, j0));
      }
    }
    if constexpr (!kHalf<T>) {
      if (in_place) {
        gemm(false, false, nq, hd, nk, 1.0f, S, kBk, vh + int64_t{j0} * ldkv, ldkv, 1.0f, O, hd);
        continue;
      }
    }
    gemm_t(false, false, nq, hd, nk, 1.0f, P, kBk, vh + int64_t{j0} * ldkv, ldkv, 1.0f, O, hd);
  }
  U* o = out + (int64_t{b} * k.Tq + i0) * d.C + int64_t{h} * hd;
  float* L = lse + int64_t{bh} * k.ld_lse + i0;
  for (int r = 0; r < nq; ++r)
    finish_row(o + int64_t{r} * d.C, L[r], O + int64_t{r} * hd, st[r], hd, merge);
}

// Key/value head kvh of sample b and its rep() query heads (one head without grouped-query
// attention): the key block loop is outside, the query heads inside, so a shared key/value
// head's dK and dV sum its query heads in head order in one fp32 accumulator. dout and out are
// [B, Tq, C]; delta [B·NH, Tq].
template <typename T, typename G>
void backward_kv_head(const AttentionGrads<G>& g, float* delta, const T* dout,
                      const AttentionOperands<T>& x, const T* out, const float* lse, const Dims& d,
                      int b, int kvh, const DropoutParams& drop, const KernelScratch& ks) {
  const AttentionBlock& blk = d.blk;
  const int hd = d.hd, Tq = blk.Tq, rep = d.rep();
  const int ldq = static_cast<int>(blk.ldq), ldkv = static_cast<int>(blk.ldkv);
  const int h0 = kvh * rep;
  const T* k = x.k + b * x.batch_kv + d.kv_col(h0);
  const T* v = x.v + b * x.batch_kv + d.kv_col(h0);
  // D_i = rowsum(dO * O): the rowsum(dP * P) of the softmax backward (with or without dropout).
  for (int h = h0; h < h0 + rep; ++h) {
    const int64_t ooff = int64_t{b} * Tq * d.C + int64_t{h} * hd;
    float* D = delta + (int64_t{b} * d.NH + h) * Tq;
    for (int i = 0; i < Tq; ++i) {
      float acc = 0.0f;
      for (int e = 0; e < hd; ++e)
        acc += to_float(dout[ooff + int64_t{i} * d.C + e]) *
               to_float(out[ooff + int64_t{i} * d.C + e]);
      D[i] = acc;
    }
  }
  // A key block meets every query row that sees it in one panel: a few large products per key
  // block instead of five per 64 x 64 tile (oneDNN's per-call cost dominated those).
  constexpr bool fp32_grads = std::is_same_v<G, float>;
  const size_t tile = size_t(Tq) * kBk;
  const size_t dq_len = fp32_grads ? 0 : size_t(Tq) * hd * rep;
  Carver<T> cv(ks, head_backward_need(d, !fp32_grads));
  float* P = cv.f32(tile);   // probabilities
  float* dS = cv.f32(tile);  // dP, then dS
  float* dK = cv.f32(size_t(kBk) * hd);
  float* dV = cv.f32(size_t(kBk) * hd);
  // dQ accumulates in fp32: in place where the gradients are fp32, else in a [Tq, hd] buffer
  // per query head.
  float* dQ0 = cv.f32(dq_len);
  // Operands in T: dropout(P) and dS (fp32 runs use the fp32 tiles where nothing changes).
  T* Pd = cv.t(tile);
  T* dSt = cv.t(tile);
  auto dq_of = [&](int h, int& ld) -> float* {
    if constexpr (fp32_grads) {
      ld = static_cast<int>(g.ldq);
      return g.q + b * g.batch_q + int64_t{h} * hd;
    } else {
      ld = hd;
      return dQ0 + size_t(h - h0) * Tq * hd;
    }
  };
  if (!g.add || !fp32_grads) {
    for (int h = h0; h < h0 + rep; ++h) {
      int ld = 0;
      float* dQ = dq_of(h, ld);
      for (int i = 0; i < Tq; ++i) std::fill(dQ + int64_t{i} * ld, dQ + int64_t{i} * ld + hd, 0.0f);
    }
  }
  for (int j0 = 0; j0 < blk.Tk; j0 += kBk) {
    const int nk = std::min(kBk, blk.Tk - j0);
    const int i0 = blk.first_row(j0), nq = Tq - i0;  // the query rows that see this key block
    std::fill(dK, dK + size_t(kBk) * hd, 0.0f);
    std::fill(dV, dV + size_t(kBk) * hd, 0.0f);
    for (int h = h0; h < h0 + rep && nq > 0; ++h) {
      const int bh = b * d.NH + h;
      const T* q = x.q + b * x.batch_q + int64_t{h} * hd + int64_t{i0} * ldq;
      const T* dy = dout + (int64_t{b} * Tq + i0) * d.C + int64_t{h} * hd;
      const float* L = lse + int64_t{bh} * blk.ld_lse + i0;
      const float* D = delta + int64_t{bh} * Tq + i0;
      int ld = 0;
      float* dQ = dq_of(h, ld) + int64_t{i0} * ld;
      gemm_t(false, true, nq, nk, hd, d.scale, q, ldq, k + int64_t{j0} * ldkv, ldkv, 0.0f, P, kBk);
      for (int r = 0; r < nq; ++r) {
        float* p = P + int64_t{r} * kBk;
        const int n = blk.live(i0 + r, j0, nk);
        const float l = L[r];
        for (int j = 0; j < n; ++j) p[j] = online_softmax_prob(p[j], l);
        for (int j = n; j < nk; ++j) p[j] = 0.0f;
        if (kHalf<T> || drop.p > 0.0f)
          drop_row(Pd + int64_t{r} * kBk, p, n, nk, drop, blk.counter(bh, i0 + r, j0));
      }
      const bool plain = !kHalf<T> && drop.p == 0.0f;  // dropout(P) = P, already fp32
      if constexpr (!kHalf<T>) {
        if (plain) gemm(true, false, nk, hd, nq, 1.0f, P, kBk, dy, d.C, 1.0f, dV, hd);
      }
      if (!plain) gemm_t(true, false, nk, hd, nq, 1.0f, Pd, kBk, dy, d.C, 1.0f, dV, hd);
      gemm_t(false, true, nq, nk, hd, 1.0f, dy, d.C, v + int64_t{j0} * ldkv, ldkv, 0.0f, dS, kBk);
      for (int r = 0; r < nq; ++r) {
        const float* p = P + int64_t{r} * kBk;
        float* gr = dS + int64_t{r} * kBk;
        const int n = blk.live(i0 + r, j0, nk);
        const float dl = D[r];
        if (drop.p > 0.0f) {
          const DropoutParams dr = drop;
          const uint64_t ctr = blk.counter(bh, i0 + r, j0);
          for (int j = 0; j < n; ++j) gr[j] = attention_dscore(p[j], gr[j], dl, dr, ctr + j);
        } else {
          for (int j = 0; j < n; ++j) gr[j] = attention_dscore(p[j], gr[j], dl);
        }
        for (int j = n; j < nk; ++j) gr[j] = 0.0f;
        if constexpr (kHalf<T>)
          for (int j = 0; j < nk; ++j) dSt[int64_t{r} * kBk + j] = from_float<T>(gr[j]);
      }
      if constexpr (kHalf<T>) {
        gemm_t(true, false, nk, hd, nq, d.scale, dSt, kBk, q, ldq, 1.0f, dK, hd);
        gemm_t(false, false, nq, hd, nk, d.scale, dSt, kBk, k + int64_t{j0} * ldkv, ldkv, 1.0f, dQ,
               ld);
      } else {
        gemm(true, false, nk, hd, nq, d.scale, dS, kBk, q, ldq, 1.0f, dK, hd);
        gemm(false, false, nq, hd, nk, d.scale, dS, kBk, k + int64_t{j0} * ldkv, ldkv, 1.0f, dQ,
             ld);
      }
    }
    G* dk = g.k + b * g.batch_kv + d.kv_col(h0) + int64_t{j0} * g.ldkv;
    G* dv = g.v + b * g.batch_kv + d.kv_col(h0) + int64_t{j0} * g.ldkv;
    for (int r = 0; r < nk; ++r) {
      store_row(dk + r * g.ldkv, dK + int64_t{r} * hd, hd, g.add);
      store_row(dv + r * g.ldkv, dV + int64_t{r} * hd, hd, g.add);
    }
  }
  if constexpr (!fp32_grads) {
    for (int h = h0; h < h0 + rep; ++h) {
      G* dq = g.q + b * g.batch_q + int64_t{h} * hd;
      const float* dQ = dQ0 + size_t(h - h0) * Tq * hd;
      for (int i = 0; i < Tq; ++i)
        for (int e = 0; e < hd; ++e) dq[i * g.ldq + e] = from_float<G>(dQ[int64_t{i} * hd + e]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The batched path (bf16 on oneDNN; see the top of the file).

template <typename T>
bool batched_path() {
  return std::is_same_v<T, bf16> && detail::onednn_bf16_available();
}

int padded(int T) {
  return (T + kBk - 1) / kBk * kBk;
}

// A group: key/value heads kv0 .. kv0 + g - 1 of the B * NKV in the batch, with the rep() query
// heads of each. Its query rows are interleaved as [position][rep][g][hd]: row x of a row-major
// [rows][g] walk is position x / g / rep, query head (x / g) % rep of key/value head x % g, so the
// query heads that share a key/value head are rows of one product against its keys and values
// (no key or value is repeated), and dK, dV sum them in the product's reduction.
struct Group {
  int kv0, g, rep;
  int64_t rows(int positions) const { return int64_t{positions} * rep * g; }
  // The batch index and the query head of row x (within a [positions][rep][g] walk), and its
  // position counted from the walk's first.
  int sample(const Dims& d, int64_t x) const { return (kv0 + int(x % g)) / d.NKV; }
  int head(const Dims& d, int64_t x) const {
    return (kv0 + int(x % g)) % d.NKV * rep + int(x / g % rep);
  }
  int position(int64_t x) const { return int(x / g / rep); }
};

// Bytes per key/value head of one group's buffers. Forward: q, the output accumulator, m and l
// of every row; a key and a value block; the scores and dropped probabilities of kRowChunk
// positions. Backward: q and dout, the dQ accumulator; a key and a value block and their fp32
// gradients; the probabilities, dP and one operand panel (dropout(P), then dS) of kRowChunk
// positions.
size_t batched_head_bytes(const Dims& d, size_t t, bool backward) {
  const size_t Tp = size_t(padded(d.blk.Tq)) * d.rep(), hd = d.hd, kb = kBk,
               rc = size_t(kRowChunk) * d.rep(), f = sizeof(float);
  if (!backward) return Tp * (hd * (t + f) + 2 * f) + 2 * kb * hd * t + rc * kb * (f + t);
  return Tp * hd * (2 * t + f) + 2 * kb * hd * (t + f) + rc * kb * (2 * f + t);
}

// Key/value heads per group: as many as fit kBatchedGroupBytes (at least one), in at least
// kMinGroups groups where there are that many heads (so two or four threads share them out
// evenly), spread evenly over the groups. Independent of the thread count, so the products (and
// the bits) are too.
int batched_group(const Dims& d, size_t t, bool backward) {
  const int64_t BK = int64_t{d.B} * d.NKV;
  const int64_t fit = std::clamp<int64_t>(
      static_cast<int64_t>(kBatchedGroupBytes / batched_head_bytes(d, t, backward)), 1, BK);
  const int64_t groups = std::max((BK + fit - 1) / fit, std::min<int64_t>(BK, kMinGroups));
  return static_cast<int>((BK + groups - 1) / groups);
}

// dst = the query rows of positions [p0, p0 + n) of the group from src (a query head h's hd
// values at h * hd of a row; rows ld apart, samples `batch` apart: q or dout), in
// [position][rep][g][hd]; zeros for rows >= Tq (the padding).
template <typename T>
void gather_queries(T* dst, const T* src, int64_t ld, int64_t batch, const Dims& d,
                    const Group& grp, int p0, int n) {
  const int64_t rows = grp.rows(n);
  for (int64_t x = 0; x < rows; ++x, dst += d.hd) {
    const int i = p0 + grp.position(x);
    if (i >= d.blk.Tq) {
      std::fill(dst, dst + d.hd, from_float<T>(0.0f));
      continue;
    }
    const T* s = src + grp.sample(d, x) * batch + i * ld + int64_t{grp.head(d, x)} * d.hd;
    std::memcpy(dst, s, d.hd * sizeof(T));
  }
}

// dst[j - j0][c] = the key (src = x.k) or value (x.v) of key/value head kv0 + c at key row j, for
// j0 <= j < j0 + kBk; zeros for j >= Tk.
template <typename T>
void gather_block(T* dst, const T* src, int64_t batch, const Dims& d, const Group& grp, int j0) {
  for (int j = j0; j < j0 + kBk; ++j)
    for (int c = 0; c < grp.g; ++c, dst += d.hd) {
      if (j >= d.blk.Tk) {
        std::fill(dst, dst + d.hd, from_float<T>(0.0f));
        continue;
      }
      const int kv = grp.kv0 + c;
      const T* s = src + (kv / d.NKV) * batch + j * d.blk.ldkv + int64_t{kv % d.NKV} * d.hd;
      std::memcpy(dst, s, d.hd * sizeof(T));
    }
}

// The interleaved product of gemm_onednn_interleaved with an fp32 result.
template <typename T>
void gemm_heads(bool ta, bool tb, int g, int M, int N, int K, float alpha, const T* A, const T* B,
                float beta, float* C) {
  detail::gemm_onednn_interleaved(ta, tb, g, M, N, K, alpha, A, B, beta, C, DType::F32);
}

// forward_group: O, m, l of every row and S of a row chunk in fp32; q, a key and a value block
// and the dropped probabilities of a row chunk in T.
Need group_forward_need(const Dims& d, const Group& grp) {
  const size_t hd = d.hd, rows = grp.rows(padded(d.blk.Tq)), kv = size_t(kBk) * grp.g * hd,
               chunk = grp.rows(kRowChunk);
  return {rows * (hd + 2) + chunk * kBk, rows * hd + 2 * kv + chunk * kBk};
}

// backward_group: dQ, dK, dV, P and dP in fp32; q, dout, a key and a value block and one operand
// panel in T.
Need group_backward_need(const Dims& d, const Group& grp) {
  const size_t hd = d.hd, rows = grp.rows(padded(d.blk.Tq)), kv = size_t(kBk) * grp.g * hd,
               chunk = grp.rows(kRowChunk);
  return {rows * hd + 2 * kv + 2 * chunk * kBk, 2 * rows * hd + 2 * kv + chunk * kBk};
}

// The first query position of the row chunks that meet key block j0: the first row that sees it,
// down to a multiple of kBk (so every product takes a multiple of kBk rows).
int first_chunk_row(const Dims& d, int j0) {
  return d.blk.first_row(j0) / kBk * kBk;
}

// The group of key/value heads kv0 .. kv0 + g - 1 (and their query heads), on the calling thread;
// out and lse as forward_tile's.
template <typename T, typename U>
void forward_group(U* out, float* lse, const AttentionOperands<T>& x, const Dims& d,
                   const Group& grp, const DropoutParams& drop, const KernelScratch& ks,
                   bool merge) {
  const AttentionBlock& blk = d.blk;
  const int hd = d.hd, Tp = padded(blk.Tq), g = grp.g;
  const size_t rows = grp.rows(Tp), kv = size_t(kBk) * g * hd, chunk = grp.rows(kRowChunk);
  Carver<T> cv(ks, group_forward_need(d, grp));
  float* O = cv.f32(rows * hd);
  float* m = cv.f32(rows);
  float* l = cv.f32(rows);
  float* S = cv.f32(chunk * kBk);
  T* Q = cv.t(rows * hd);
  T* K = cv.t(kv);
  T* V = cv.t(kv);
  T* P = cv.t(chunk * kBk);
  gather_queries(Q, x.q, blk.ldq, x.batch_q, d, grp, 0, Tp);
  std::fill(O, O + rows * hd, 0.0f);
  std::fill(m, m + rows, kMaskedScore);
  std::fill(l, l + rows, 0.0f);
  for (int j0 = 0; j0 < blk.Tk; j0 += kBk) {
    const int nk = std::min(kBk, blk.Tk - j0);
    gather_block(K, x.k, x.batch_kv, d, grp, j0);
    gather_block(V, x.v, x.batch_kv, d, grp, j0);
    // The positions that see the block, kRowChunk at a time: S = q k^T scale, the online softmax
    // per row, then O += dropout(P) v.
    for (int p0 = first_chunk_row(d, j0); p0 < Tp; p0 += kRowChunk) {
      const int n = std::min(kRowChunk, Tp - p0), M = n * grp.rep;
      const size_t r0 = grp.rows(p0);
      gemm_heads(false, true, g, M, kBk, hd, d.scale, Q + r0 * hd, K, 0.0f, S);
      for (int64_t y = 0; y < int64_t{M} * g; ++y) {
        const int i = p0 + grp.position(y);
        float* s = S + y * kBk;
        T* p = P + y * kBk;
        if (i >= blk.Tq) {
          std::fill(p, p + kBk, from_float<T>(0.0f));
          continue;
        }
        const size_t row = r0 + size_t(y);
        float* o = O + row * hd;
        const int live = blk.live(i, j0, nk);
        OnlineSoftmax st{m[row], l[row]};
        float mx = kMaskedScore;
        for (int j = 0; j < live; ++j) mx = s[j] > mx ? s[j] : mx;
        const float alpha = online_softmax_raise(st, mx);
        if (alpha != 1.0f)
          for (int e = 0; e < hd; ++e) o[e] *= alpha;
        for (int j = 0; j < live; ++j) s[j] = online_softmax_prob(s[j], st.m);
        st.l += lane_sum(s, live);
        m[row] = st.m;
        l[row] = st.l;
        const int64_t bh = int64_t{grp.sample(d, y)} * d.NH + grp.head(d, y);
        drop_row(p, s, live, kBk, drop, blk.counter(bh, i, j0));
      }
      gemm_heads(false, false, g, M, hd, kBk, 1.0f, P, V, 1.0f, O + r0 * hd);
    }
  }
  for (int64_t y = 0; y < grp.rows(blk.Tq); ++y) {
    const int i = grp.position(y), b = grp.sample(d, y), h = grp.head(d, y);
    finish_row(out + (int64_t{b} * blk.Tq + i) * d.C + int64_t{h} * hd,
               lse[(int64_t{b} * d.NH + h) * blk.ld_lse + i], O + y * hd, OnlineSoftmax{m[y], l[y]},
               hd, merge);
  }
}

template <typename T, typename G>
void backward_group(const AttentionGrads<G>& gr, float* delta, const T* dout,
                    const AttentionOperands<T>& x, const T* out, const float* lse, const Dims& d,
                    const Group& grp, const DropoutParams& drop, const KernelScratch& ks) {
  const AttentionBlock& blk = d.blk;
  const int hd = d.hd, Tq = blk.Tq, Tp = padded(Tq), g = grp.g;
  const size_t rows = grp.rows(Tp), kv = size_t(kBk) * g * hd, chunk = grp.rows(kRowChunk);
  Carver<T> cv(ks, group_backward_need(d, grp));
  float* dQ = cv.f32(rows * hd);
  float* dK = cv.f32(kv);
  float* dV = cv.f32(kv);
  float* P = cv.f32(chunk * kBk);
  float* dP = cv.f32(chunk * kBk);  // dP, then dS
  T* Q = cv.t(rows * hd);
  T* dO = cv.t(rows * hd);
  T* K = cv.t(kv);
  T* V = cv.t(kv);
  T* op = cv.t(chunk * kBk);  // dropout(P) for dV, then dS for dK and dQ
  gather_queries(Q, x.q, blk.ldq, x.batch_q, d, grp, 0, Tp);
  gather_queries(dO, dout, d.C, int64_t{Tq} * d.C, d, grp, 0, Tp);
  std::fill(dQ, dQ + rows * hd, 0.0f);
  // D_i = rowsum(dO * O): the rowsum(dP * P) of the softmax backward (with or without dropout).
  for (int64_t y = 0; y < grp.rows(Tq); ++y) {
    const int i = grp.position(y), b = grp.sample(d, y), h = grp.head(d, y);
    const int64_t at = (int64_t{b} * Tq + i) * d.C + int64_t{h} * hd;
    float acc = 0.0f;
    for (int e = 0; e < hd; ++e) acc += to_float(dout[at + e]) * to_float(out[at + e]);
    delta[(int64_t{b} * d.NH + h) * Tq + i] = acc;
  }
  for (int j0 = 0; j0 < blk.Tk; j0 += kBk) {
    const int nk = std::min(kBk, blk.Tk - j0), start = first_chunk_row(d, j0);
    gather_block(K, x.k, x.batch_kv, d, grp, j0);
    gather_block(V, x.v, x.batch_kv, d, grp, j0);
    if (start >= Tp) {  // no row sees the block
      std::fill(dK, dK + kv, 0.0f);
      std::fill(dV, dV + kv, 0.0f);
    }
    for (int p0 = start; p0 < Tp; p0 += kRowChunk) {
      const int n = std::min(kRowChunk, Tp - p0), M = n * grp.rep;
      const size_t q0 = grp.rows(p0) * hd;
      const float first = p0 == start ? 0.0f : 1.0f;  // dK and dV: the first chunk sets them
      gemm_heads(false, true, g, M, kBk, hd, d.scale, Q + q0, K, 0.0f, P);
      for (int64_t y = 0; y < int64_t{M} * g; ++y) {
        const int i = p0 + grp.position(y);
        const int64_t bh = int64_t{grp.sample(d, y)} * d.NH + grp.head(d, y);
        float* p = P + y * kBk;
        const int live = i < Tq ? blk.live(i, j0, nk) : 0;
        const float lv = live > 0 ? lse[bh * blk.ld_lse + i] : 0.0f;
        for (int j = 0; j < live; ++j) p[j] = online_softmax_prob(p[j], lv);
        for (int j = live; j < kBk; ++j) p[j] = 0.0f;
        drop_row(op + y * kBk, p, live, kBk, drop, blk.counter(bh, i, j0));
      }
      // dV += dropout(P)^T dO, dP = dO v^T (each over the rep query heads' rows too).
      gemm_heads(true, false, g, kBk, hd, M, 1.0f, op, dO + q0, first, dV);
      gemm_heads(false, true, g, M, kBk, hd, 1.0f, dO + q0, V, 0.0f, dP);
      for (int64_t y = 0; y < int64_t{M} * g; ++y) {
        const int i = p0 + grp.position(y);
        const int64_t bh = int64_t{grp.sample(d, y)} * d.NH + grp.head(d, y);
        const float* p = P + y * kBk;
        float* gy = dP + y * kBk;
        const int live = i < Tq ? blk.live(i, j0, nk) : 0;
        const float dl = live > 0 ? delta[bh * Tq + i] : 0.0f;
        if (drop.p > 0.0f) {
          const DropoutParams dr = drop;
          const uint64_t ctr = blk.counter(bh, i, j0);
          for (int j = 0; j < live; ++j) gy[j] = attention_dscore(p[j], gy[j], dl, dr, ctr + j);
        } else {
          for (int j = 0; j < live; ++j) gy[j] = attention_dscore(p[j], gy[j], dl);
        }
        for (int j = live; j < kBk; ++j) gy[j] = 0.0f;
        T* o = op + y * kBk;
        for (int j = 0; j < kBk; ++j) o[j] = from_float<T>(gy[j]);
      }
      // dK += dS^T q scale, dQ += dS k scale.
      gemm_heads(true, false, g, kBk, hd, M, d.scale, op, Q + q0, first, dK);
      gemm_heads(false, false, g, M, hd, kBk, d.scale, op, K, 1.0f, dQ + q0);
    }
    for (int64_t y = 0; y < int64_t{nk} * g; ++y) {
      const int r = j0 + static_cast<int>(y / g), kvh = grp.kv0 + static_cast<int>(y % g);
      const int64_t at = (kvh / d.NKV) * gr.batch_kv + r * gr.ldkv + int64_t{kvh % d.NKV} * hd;
      store_row(gr.k + at, dK + y * hd, hd, gr.add);
      store_row(gr.v + at, dV + y * hd, hd, gr.add);
    }
  }
  for (int64_t y = 0; y < grp.rows(Tq); ++y) {
    const int i = grp.position(y), b = grp.sample(d, y), h = grp.head(d, y);
    store_row(gr.q + b * gr.batch_q + i * gr.ldq + int64_t{h} * hd, dQ + y * hd, hd, gr.add);
  }
}

// The groups of the batched path: the B * NKV key/value heads in groups of batched_group().
struct Groups {
  int size, count, total;
  Group at(const Dims& d, int k) const {
    return {k * size, std::min(size, total - k * size), d.rep()};
  }
  static Groups of(const Dims& d, size_t t, bool backward) {
    const int total = d.B * d.NKV, size = batched_group(d, t, backward);
    return {size, (total + size - 1) / size, total};
  }
};

// attention_forward's operands: q|k|v rows of B whole sequences; attention_backward's gradients,
// stored into dqkv of the same layout.
template <typename T>
AttentionOperands<T> whole_sequences(const T* qkv, const Dims& d) {
  const int64_t batch = int64_t{d.T} * d.C3;
  return {qkv, qkv + d.C, qkv + d.C + d.Ckv, batch, batch};
}
template <typename T>
AttentionGrads<T> whole_grads(T* dqkv, const Dims& d) {
  const int64_t batch = int64_t{d.T} * d.C3;
  return {dqkv, dqkv + d.C, dqkv + d.C + d.Ckv, d.C3, d.C3, batch, batch, false};
}

}  // namespace

// Threading: OpenMP over the tasks, each task's sgemms single-threaded (a parallel OpenBLAS
// inside an OpenMP loop would fight it for the cores). Forward's tasks differ in size (a query
// block attends to its prefix), so they are handed out dynamically; each result is computed by
// one thread in a fixed order, so neither backend result depends on the schedule.
template <typename T>
void Kernels::attention_forward(T* out, float* lse, const T* qkv, int B, int Tn, int C, int NH,
                                int NKV, const DropoutParams& drop, Exec) {
  const Dims d = make_dims(B, Tn, C, NH, NKV, drop);
  const KernelScratch ks = bound_scratch();
  if (batched_path<T>()) {
    const Groups gs = Groups::of(d, sizeof(T), false);
    check_scratch(ks, group_forward_need(d, gs.at(d, 0)).bytes(sizeof(T)));
#pragma omp parallel for schedule(dynamic)
    for (int k = 0; k < gs.count; ++k)
      forward_group(out, lse, whole_sequences(qkv, d), d, gs.at(d, k), drop, ks, false);
    return;
  }
  const int nb = d.blocks_q(), tasks = B * NH * nb;
  check_scratch(ks, tile_forward_need(d).bytes(sizeof(T)));
  detail::BlasSingleThreaded single;
#pragma omp parallel for schedule(dynamic)
  for (int t = 0; t < tasks; ++t) {
    // Largest blocks first: the long tasks start early and the short ones fill the tail.
    const int qb = nb - 1 - t / (B * NH), bh = t % (B * NH);
    forward_tile(out, lse, whole_sequences(qkv, d), d, bh, qb, drop, ks, false);
  }
}

template <typename T>
void Kernels::attention_backward(T* dqkv, float* delta, const T* dout, const T* qkv, const T* out,
                                 const float* lse, int B, int Tn, int C, int NH, int NKV,
                                 const DropoutParams& drop, Exec) {
  const Dims d = make_dims(B, Tn, C, NH, NKV, drop);
  const KernelScratch ks = bound_scratch();
  if (batched_path<T>()) {
    const Groups gs = Groups::of(d, sizeof(T), true);
    check_scratch(ks, group_backward_need(d, gs.at(d, 0)).bytes(sizeof(T)));
#pragma omp parallel for schedule(dynamic)
    for (int k = 0; k < gs.count; ++k)
      backward_group(whole_grads(dqkv, d), delta, dout, whole_sequences(qkv, d), out, lse, d,
                     gs.at(d, k), drop, ks);
    return;
  }
  check_scratch(ks, head_backward_need(d, kHalf<T>).bytes(sizeof(T)));
  detail::BlasSingleThreaded single;
  const int tasks = B * NKV;
#pragma omp parallel for schedule(dynamic)
  for (int t = 0; t < tasks; ++t)
    backward_kv_head(whole_grads(dqkv, d), delta, dout, whole_sequences(qkv, d), out, lse, d,
                     t / NKV, t % NKV, drop, ks);
}

template <typename T>
void Kernels::attention_block_forward(float* out, float* lse, const T* q, const T* kv, int C,
                                      int NH, int NKV, const AttentionBlock& blk, bool merge,
                                      const DropoutParams& drop, Exec) {
  const Dims d = block_dims(C, NH, NKV, blk, drop);
  const KernelScratch ks = bound_scratch();
  const AttentionOperands<T> x{q, kv, kv + d.Ckv, 0, 0};
  if (batched_path<T>()) {
    const Groups gs = Groups::of(d, sizeof(T), false);
    check_scratch(ks, group_forward_need(d, gs.at(d, 0)).bytes(sizeof(T)));
#pragma omp parallel for schedule(dynamic)
    for (int k = 0; k < gs.count; ++k) forward_group(out, lse, x, d, gs.at(d, k), drop, ks, merge);
    return;
  }
  check_scratch(ks, tile_forward_need(d).bytes(sizeof(T)));
  const int nb = d.blocks_q(), tasks = NH * nb;
  detail::BlasSingleThreaded single;
#pragma omp parallel for schedule(dynamic)
  for (int t = 0; t < tasks; ++t) forward_tile(out, lse, x, d, t % NH, t / NH, drop, ks, merge);
}

template <typename T>
void Kernels::attention_block_backward(float* dq, float* dkv, float* delta, const T* dout,
                                       const T* out, const T* q, const T* kv, const float* lse,
                                       int C, int NH, int NKV, const AttentionBlock& blk,
                                       const DropoutParams& drop, Exec) {
  const Dims d = block_dims(C, NH, NKV, blk, drop);
  const KernelScratch ks = bound_scratch();
  const AttentionOperands<T> x{q, kv, kv + d.Ckv, 0, 0};
  const AttentionGrads<float> g{dq, dkv, dkv + d.Ckv, C, 2 * d.Ckv, 0, 0, true};
  if (batched_path<T>()) {
    const Groups gs = Groups::of(d, sizeof(T), true);
    check_scratch(ks, group_backward_need(d, gs.at(d, 0)).bytes(sizeof(T)));
#pragma omp parallel for schedule(dynamic)
    for (int k = 0; k < gs.count; ++k)
      backward_group(g, delta, dout, x, out, lse, d, gs.at(d, k), drop, ks);
    return;
  }
  check_scratch(ks, head_backward_need(d, false).bytes(sizeof(T)));
  detail::BlasSingleThreaded single;
#pragma omp parallel for schedule(dynamic)
  for (int t = 0; t < NKV; ++t) backward_kv_head(g, delta, dout, x, out, lse, d, 0, t, drop, ks);
}

template <typename T>
size_t attention_block_scratch_per_thread(int Tq, int C, int NH, int NKV) {
  const int hd = C / NH;
  const AttentionBlock blk = AttentionBlock::whole(Tq, int64_t{C} + 2 * int64_t{NKV} * hd);
  const Dims d = block_dims(C, NH, NKV, blk, DropoutParams{});
  if (batched_path<T>())
    return Need::align(
        std::max(group_forward_need(d, Groups::of(d, sizeof(T), false).at(d, 0)).bytes(sizeof(T)),
                 group_backward_need(d, Groups::of(d, sizeof(T), true).at(d, 0)).bytes(sizeof(T))));
  return Need::align(std::max(tile_forward_need(d).bytes(sizeof(T)),
                              head_backward_need(d, false).bytes(sizeof(T))));
}

template <typename T>
size_t attention_scratch_per_thread(int B, int Tn, int C, int NH, int NKV) {
  const Dims d = make_dims(B, Tn, C, NH, NKV, DropoutParams{});
  size_t need = 0;
  if (batched_path<T>()) {
    need =
        std::max(group_forward_need(d, Groups::of(d, sizeof(T), false).at(d, 0)).bytes(sizeof(T)),
                 group_backward_need(d, Groups::of(d, sizeof(T), true).at(d, 0)).bytes(sizeof(T)));
  } else {
    need = std::max(tile_forward_need(d).bytes(sizeof(T)),
                    head_backward_need(d, kHalf<T>).bytes(sizeof(T)));
  }
  return Need::align(need);
}

}  // namespace cpu

size_t cpu_attention_scratch_per_thread(int B, int T, int C, int NH, int NKV, DType t) {
  switch (t) {
    case DType::F32:
      return cpu::attention_scratch_per_thread<float>(B, T, C, NH, NKV);
    case DType::BF16:
      return cpu::attention_scratch_per_thread<bf16>(B, T, C, NH, NKV);
    case DType::F16:
      return cpu::attention_scratch_per_thread<fp16>(B, T, C, NH, NKV);
    default:
      throw Error(fmt::format("attention scratch: no attention in {}", dtype_name(t)));
  }
}

size_t cpu_attention_block_scratch_per_thread(int Tq, int C, int NH, int NKV, DType t) {
  switch (t) {
    case DType::F32:
      return cpu::attention_block_scratch_per_thread<float>(Tq, C, NH, NKV);
    case DType::BF16:
      return cpu::attention_block_scratch_per_thread<bf16>(Tq, C, NH, NKV);
    case DType::F16:
      return cpu::attention_block_scratch_per_thread<fp16>(Tq, C, NH, NKV);
    default:
      throw Error(fmt::format("attention scratch: no attention in {}", dtype_name(t)));
  }
}

int cpu_kernel_threads() {
  return omp_get_max_threads();
}

namespace cpu {

#define ZT_ATTENTION(T)                                                                            \
  template void Kernels::attention_forward<T>(T*, float*, const T*, int, int, int, int, int,       \
                                              const DropoutParams&, Kernels::Exec);                \
  template void Kernels::attention_backward<T>(T*, float*, const T*, const T*, const T*,           \
                                               const float*, int, int, int, int, int,              \
                                               const DropoutParams&, Kernels::Exec);               \
  template void Kernels::attention_block_forward<T>(float*, float*, const T*, const T*, int, int,  \
                                                    int, const AttentionBlock&, bool,              \
                                                    const DropoutParams&, Kernels::Exec);          \
  template void Kernels::attention_block_backward<T>(                                              \
      float*, float*, float*, const T*, const T*, const T*, const T*, const float*, int, int, int, \
      const AttentionBlock&, const DropoutParams&, Kernels::Exec);
ZT_ATTENTION(float)
ZT_ATTENTION(bf16)
ZT_ATTENTION(fp16)
#undef ZT_ATTENTION

}  // namespace cpu
}  // namespace zt
