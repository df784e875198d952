// Flash-style causal self-attention: the algorithm of kernels/cpu/attention.cpp and the element
// math of kernels/common/attention.h in three kernels plus a row reduction, nothing of size
// T x T in memory (FlashAttention-2's schedule: Dao, 2023, arXiv:2307.08691).
//
// Forward: one block per (query tile, b*NH + h); b*NH + h runs over grid y and z (grid.cuh: y
// alone holds 65,535). Q's tile stays in shared memory; for each key
// tile up to the diagonal (causal tile skipping) S = Q K^T scale goes to shared memory in fp32,
// one warp per row raises the running max (online_softmax_raise), writes the dropped
// probabilities in T and rescales the fp32 output accumulator, then O += P V. At the end
// out = O / l and lse = m + log(l) (fp32).
//
// Backward, deterministic (no atomics): D = rowsum(dO * O) per row, then two kernels that each
// recompute P = exp(S - lse) tile by tile: one block per key tile accumulates dK and dV over the
// query tiles at and below the diagonal, one block per query tile accumulates dQ over the key
// tiles up to the diagonal. (FlashAttention-2 accumulates dQ with fp32 atomics in the dK/dV
// pass instead: one product less, but the sum order then depends on the schedule.)
//
// Products on tiles: bf16 and fp16 on tensor cores through WMMA (16x16x16, fp32 accumulation;
// bf16 needs sm_80, fp16 runs from sm_70; the bf16 tensor-core code is compiled only for
// __CUDA_ARCH__ >= 800, so the file stays valid for sm_70, where bf16 takes the SIMT path),
// fp32 on the SIMT cores (exact fp32, as the CPU). Tiles are 64 x 64 when they fit the device's
// shared memory with the head size (else 32 or 16); hd is padded with zeros to a multiple of 16
// and rows past T are masked, so any T and any hd up to the shared-memory limit work.
//
// Dropout: element (b, h, i, j) uses counter drop.offset + ((b*NH + h)*T + i)*T + j, as on the
// CPU, so the masks agree bit for bit.
//
// The same kernels run ring attention's blocks (attention_block_forward/backward): Shape::blk
// places the query rows and the keys in the whole sequence (mask and counters by position),
// AttentionOperands/AttentionGrads say where the operands and gradients are; forward merges into
// an fp32 running output (Out = float, merge), backward adds to fp32 gradients.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/common/attention.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// Row padding of shared-memory tiles (elements): keeps every 16-row fragment 32-byte aligned for
// WMMA and spreads rows over the banks.
template <typename E>
constexpr int kPad = sizeof(E) == 2 ? 8 : 4;

struct Shape {
  int T, C, NH, hd, hdp;  // hdp: hd rounded up to 16
  int64_t BH;             // B·NH, the heads of the folded grid
  int64_t C3;             // row stride of qkv: C + 2 Ckv
  float scale;
  int bq, bk;          // query rows and keys per tile (multiples of 16)
  int NKV;             // key/value heads (grouped-query attention; NH without it)
  int64_t Ckv;         // NKV · hd
  AttentionBlock blk;  // each sample's block (the whole sequence but for attention_block_*)
  __host__ __device__ int rep() const { return NH / NKV; }
  // Offset in a k (or v) row of query head h's key/value head.
  __host__ __device__ int64_t kv_col(int h) const { return int64_t{h / rep()} * hd; }
};

// Shared memory carved in 128-byte aligned regions; the same walk sizes it on the host.
struct Carve {
  unsigned char* base;  // null when only sizing
  size_t used = 0;
  template <typename X>
  __host__ __device__ X* take(size_t n) {
    X* p = reinterpret_cast<X*>(reinterpret_cast<uintptr_t>(base) + used);
    used += (n * sizeof(X) + 127) / 128 * 128;
    return p;
  }
};

template <typename E>
struct FwdSmem {
  E *q, *k, *v, *p;
  float *s, *o, *m, *l, *alpha;
  int ldh, ldo, lds, ldp;
  __host__ __device__ FwdSmem(Carve& c, const Shape& s)
      : ldh(s.hdp + kPad<E>), ldo(s.hdp + 4), lds(s.bk + 4), ldp(s.bk + kPad<E>) {
    q = c.take<E>(size_t(s.bq) * ldh);
    k = c.take<E>(size_t(s.bk) * ldh);
    v = c.take<E>(size_t(s.bk) * ldh);
    p = c.take<E>(size_t(s.bq) * ldp);
    this->s = c.take<float>(size_t(s.bq) * lds);
    o = c.take<float>(size_t(s.bq) * ldo);
    m = c.take<float>(s.bq);
    l = c.take<float>(s.bq);
    alpha = c.take<float>(s.bq);
  }
};

// Shared by both backward kernels: the dK/dV kernel uses acc_a/acc_b for dK/dV, the dQ kernel
// acc_a for dQ (acc_b is then not carved).
template <typename E>
struct BwdSmem {
  E *q, *dout, *k, *v, *p, *ds;
  float *s, *dp, *acc_a, *acc_b, *lse, *delta;
  int ldh, lda, lds, ldp;
  __host__ __device__ BwdSmem(Carve& c, const Shape& s, bool two_acc)
      : ldh(s.hdp + kPad<E>), lda(s.hdp + 4), lds(s.bk + 4), ldp(s.bk + kPad<E>) {
    q = c.take<E>(size_t(s.bq) * ldh);
    dout = c.take<E>(size_t(s.bq) * ldh);
    k = c.take<E>(size_t(s.bk) * ldh);
    v = c.take<E>(size_t(s.bk) * ldh);
    p = c.take<E>(size_t(s.bq) * ldp);
    ds = c.take<E>(size_t(s.bq) * ldp);
    this->s = c.take<float>(size_t(s.bq) * lds);
    dp = c.take<float>(size_t(s.bq) * lds);
    const int acc_rows = two_acc ? s.bk : s.bq;
    acc_a = c.take<float>(size_t(acc_rows) * lda);
    acc_b = two_acc ? c.take<float>(size_t(acc_rows) * lda) : nullptr;
    lse = c.take<float>(s.bq);
    delta = c.take<float>(s.bq);
  }
};

template <typename E>
size_t fwd_smem_bytes(const Shape& s) {
  Carve c{nullptr};
  FwdSmem<E> m(c, s);
  return c.used;
}
template <typename E>
size_t bwd_smem_bytes(const Shape& s, bool two_acc) {
  Carve c{nullptr};
  BwdSmem<E> m(c, s, two_acc);
  return c.used;
}

// rows x hdp tile of a [*, hd] view with row stride ld: rows past n and columns past hd are 0.
template <typename E>
__device__ void load_tile(E* dst, int ldd, const E* src, int64_t ld, int n, int rows, int hd,
                          int hdp) {
  for (int x = threadIdx.x; x < rows * hdp; x += kThreads) {
    const int r = x / hdp, e = x % hdp;
    dst[r * ldd + e] = r < n && e < hd ? src[r * ld + e] : from_float<E>(0.0f);
  }
}

__device__ void fill(float* dst, int ld, int rows, int cols, float v) {
  for (int x = threadIdx.x; x < rows * cols; x += kThreads) dst[(x / cols) * ld + x % cols] = v;
}

// The tensor-core element type of E (bf16 -> __nv_bfloat16, fp16 -> __half).
template <typename E>
struct WmmaType;
template <>
struct WmmaType<bf16> {
  using type = __nv_bfloat16;
};
template <>
struct WmmaType<fp16> {
  using type = __half;
};

// Whether E's products run on tensor cores in the architecture being compiled.
template <typename E>
__device__ constexpr bool use_wmma() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return !std::is_same_v<E, float>;
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  return std::is_same_v<E, fp16>;
#else
  return false;
#endif
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
// C (+)= alpha op(A) op(B) on 16x16 fragments, the block's warps taking output tiles in turn.
template <typename E, bool TA, bool TB>
__device__ void tile_mma_wmma(float* C, int ldc, const E* A, int lda, const E* B, int ldb, int M,
                              int N, int K, float alpha, bool accumulate) {
  namespace wmma = nvcuda::wmma;
  using W = typename WmmaType<E>::type;
  using LayoutA = std::conditional_t<TA, wmma::col_major, wmma::row_major>;
  using LayoutB = std::conditional_t<TB, wmma::col_major, wmma::row_major>;
  const W* a = reinterpret_cast<const W*>(A);
  const W* b = reinterpret_cast<const W*>(B);
  const int warp = threadIdx.x / 32, tiles_n = N / 16;
  for (int t = warp; t < (M / 16) * tiles_n; t += kWarps) {
    const int m = t / tiles_n * 16, n = t % tiles_n * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, W, LayoutA> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, W, LayoutB> fb;
      wmma::load_matrix_sync(fa, TA ? a + k * lda + m : a + m * lda + k, lda);
      wmma::load_matrix_sync(fb, TB ? b + n * ldb + k : b + k * ldb + n, ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    if (accumulate) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> old;
      wmma::load_matrix_sync(old, C + m * ldc + n, ldc, wmma::mem_row_major);
      for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = old.x[i] + alpha * acc.x[i];
    } else {
      for (int i = 0; i < acc.num_elements; ++i) acc.x[i] *= alpha;
    }
    wmma::store_matrix_sync(C + m * ldc + n, acc, ldc, wmma::mem_row_major);
  }
}
#endif

// C[M,N] (+)= alpha op(A)[M,K] op(B)[K,N] on shared-memory tiles (row-major; op = transpose
// when TA/TB), fp32 accumulation; M, N, K multiples of 16. The caller synchronises around it.
template <typename E, bool TA, bool TB>
__device__ void tile_mma(float* C, int ldc, const E* A, int lda, const E* B, int ldb, int M, int N,
                         int K, float alpha, bool accumulate) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  if constexpr (use_wmma<E>()) {
    tile_mma_wmma<E, TA, TB>(C, ldc, A, lda, B, ldb, M, N, K, alpha, accumulate);
  } else
#endif
  {
    for (int x = threadIdx.x; x < M * N; x += kThreads) {
      const int m = x / N, n = x % N;
      float acc = 0.0f;
      for (int k = 0; k < K; ++k)
        acc += to_float(TA ? A[k * lda + m] : A[m * lda + k]) *
               to_float(TB ? B[n * ldb + k] : B[k * ldb + n]);
      C[m * ldc + n] = (accumulate ? C[m * ldc + n] : 0.0f) + alpha * acc;
    }
  }
}

__device__ float warp_max(float x) {
  for (int o = 16; o > 0; o /= 2) {
    const float y = __shfl_xor_sync(0xffffffffu, x, o);
    x = y > x ? y : x;
  }
  return x;
}
__device__ float warp_sum(float x) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// Out = E: out [B, Tq, C] and lse [B·NH, ld_lse] are written. Out = float with `merge`: they hold
// a running result the block is merged into (attention_block_forward). At least one block per
// multiprocessor: without the hint ptxas held the half-precision instances to 64 registers on
// sm_90 and spilled (scripts/check_cuda_resources.py); with it they take about 110 and do not
// (the shared-memory tiles allow two or three blocks per multiprocessor either way).
template <typename E, typename Out>
__global__ void __launch_bounds__(kThreads, 1)
    forward_kernel(Out* out, float* lse, AttentionOperands<E> x, Shape s, DropoutParams drop,
                   bool merge) {
  extern __shared__ __align__(128) unsigned char smem[];
  Carve c{smem};
  FwdSmem<E> t(c, s);
  const AttentionBlock& blk = s.blk;
  const int qb = gridDim.x - 1 - blockIdx.x;  // the longest rows first
  if (folded_y() >= s.BH) return;             // padding of the last grid plane
  const int bh = static_cast<int>(folded_y()), b = bh / s.NH, h = bh % s.NH;
  const int i0 = qb * s.bq, nq = min(s.bq, blk.Tq - i0), keys = blk.keys(i0 + nq);
  const E* q = x.q + b * x.batch_q + int64_t{h} * s.hd;
  const E* kh = x.k + b * x.batch_kv + s.kv_col(h);
  const E* vh = x.v + b * x.batch_kv + s.kv_col(h);
  load_tile(t.q, t.ldh, q + i0 * blk.ldq, blk.ldq, nq, s.bq, s.hd, s.hdp);
  fill(t.o, t.ldo, s.bq, s.hdp, 0.0f);
  for (int r = threadIdx.x; r < s.bq; r += kThreads) {
    t.m[r] = kMaskedScore;
    t.l[r] = 0.0f;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int j0 = 0; j0 < keys; j0 += s.bk) {
    const int nk = min(s.bk, keys - j0);
    load_tile(t.k, t.ldh, kh + j0 * blk.ldkv, blk.ldkv, nk, s.bk, s.hd, s.hdp);
    load_tile(t.v, t.ldh, vh + j0 * blk.ldkv, blk.ldkv, nk, s.bk, s.hd, s.hdp);
    __syncthreads();
    tile_mma<E, false, true>(t.s, t.lds, t.q, t.ldh, t.k, t.ldh, s.bq, s.bk, s.hdp, s.scale, false);
    __syncthreads();
    for (int r = warp; r < s.bq; r += kWarps) {
      const int i = i0 + r;
      const int n = r < nq ? blk.live(i, j0, nk) : 0;  // the keys of this tile row i sees
      const float* srow = t.s + r * t.lds;
      float mx = kMaskedScore;
      for (int j = lane; j < n; j += 32) mx = srow[j] > mx ? srow[j] : mx;
      mx = warp_max(mx);
      OnlineSoftmax st{t.m[r], t.l[r]};
      const float alpha = online_softmax_raise(st, mx);
      float sum = 0.0f;
      for (int j = lane; j < s.bk; j += 32) {
        float pd = 0.0f;
        if (j < n) {
          const float p = online_softmax_prob(srow[j], st.m);
          sum += p;
          pd = drop.p > 0.0f ? dropout_apply(p, drop, blk.counter(bh, i, j0 + j)) : p;
        }
        t.p[r * t.ldp + j] = from_float<E>(pd);
      }
      sum = warp_sum(sum);
      __syncwarp();
      if (lane == 0) {
        t.m[r] = st.m;
        t.l[r] = st.l + sum;
        t.alpha[r] = alpha;
      }
    }
    __syncthreads();
    for (int x2 = threadIdx.x; x2 < s.bq * s.hdp; x2 += kThreads) {
      const int r = x2 / s.hdp;
      t.o[r * t.ldo + x2 % s.hdp] *= t.alpha[r];
    }
    __syncthreads();
    tile_mma<E, false, false>(t.o, t.ldo, t.p, t.ldp, t.v, t.ldh, s.bq, s.hdp, s.bk, 1.0f, true);
    __syncthreads();
  }
  Out* o = out + (int64_t{b} * blk.Tq + i0) * s.C + int64_t{h} * s.hd;
  float* L = lse + int64_t{bh} * blk.ld_lse + i0;
  if (!merge) {
    // A row that sees no key of the block (only under attention_block_forward): 0 and -inf.
    for (int x2 = threadIdx.x; x2 < nq * s.hd; x2 += kThreads) {
      const int r = x2 / s.hd, e = x2 % s.hd;
      o[int64_t{r} * s.C + e] = from_float<Out>(t.l[r] > 0.0f ? t.o[r * t.ldo + e] / t.l[r] : 0.0f);
    }
    for (int r = threadIdx.x; r < nq; r += kThreads)
      L[r] = t.l[r] > 0.0f ? online_softmax_lse(OnlineSoftmax{t.m[r], t.l[r]}) : kMaskedScore;
    return;
  }
  // The weights first (one thread per row), then the rows; a row that sees no key keeps its own.
  for (int r = threadIdx.x; r < nq; r += kThreads) {
    AttentionMerge w{1.0f, 0.0f};
    if (t.l[r] > 0.0f) w = attention_merge(L[r], online_softmax_lse(OnlineSoftmax{t.m[r], t.l[r]}));
    t.m[r] = w.keep;
    t.alpha[r] = t.l[r] > 0.0f ? w.take / t.l[r] : 0.0f;
  }
  __syncthreads();
  for (int x2 = threadIdx.x; x2 < nq * s.hd; x2 += kThreads) {
    const int r = x2 / s.hd, e = x2 % s.hd;
    Out& y = o[int64_t{r} * s.C + e];
    y = from_float<Out>(to_float(y) * t.m[r] + t.o[r * t.ldo + e] * t.alpha[r]);
  }
}

// D = rowsum(dO * O) per (b*NH + h, i): one warp per row.
template <typename E>
__global__ void delta_kernel(float* delta, const E* dout, const E* out, Shape s, int64_t rows) {
  const int64_t row = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int64_t bh = row / s.blk.Tq, i = row % s.blk.Tq, b = bh / s.NH, h = bh % s.NH;
  const int64_t off = (b * s.blk.Tq + i) * s.C + h * s.hd;
  float acc = 0.0f;
  for (int e = lane; e < s.hd; e += 32) acc += to_float(dout[off + e]) * to_float(out[off + e]);
  acc = warp_sum(acc);
  if (lane == 0) delta[row] = acc;
}

// P and dS of one (query tile, key tile) pair from S = Q K^T scale and dP = dO V^T in shared
// memory: t.p = dropout(P), t.ds = dS, both rounded to E (zero where masked).
template <typename E>
__device__ void probabilities_and_dscores(BwdSmem<E>& t, const Shape& s, int bh, int i0, int nq,
                                          int j0, int nk, const DropoutParams& drop) {
  for (int x = threadIdx.x; x < s.bq * s.bk; x += kThreads) {
    const int r = x / s.bk, j = x % s.bk, i = i0 + r;
    const bool live = r < nq && j < s.blk.live(i, j0, nk);
    float pd = 0.0f, ds = 0.0f;
    if (live) {
      const uint64_t ctr = s.blk.counter(bh, i, j0 + j);
      const float p = online_softmax_prob(t.s[r * t.lds + j], t.lse[r]);
      pd = drop.p > 0.0f ? dropout_apply(p, drop, ctr) : p;
      const float dp = t.dp[r * t.lds + j];
      ds = drop.p > 0.0f ? attention_dscore(p, dp, t.delta[r], drop, ctr)
                         : attention_dscore(p, dp, t.delta[r]);
    }
    t.p[r * t.ldp + j] = from_float<E>(pd);
    t.ds[r * t.ldp + j] = from_float<E>(ds);
  }
}

template <typename E>
__device__ void load_query_tile(BwdSmem<E>& t, const Shape& s, const E* q, const E* dout,
                                const float* lse, const float* delta, int i0, int nq) {
  load_tile(t.q, t.ldh, q + i0 * s.blk.ldq, s.blk.ldq, nq, s.bq, s.hd, s.hdp);
  load_tile(t.dout, t.ldh, dout + int64_t{i0} * s.C, s.C, nq, s.bq, s.hd, s.hdp);
  for (int r = threadIdx.x; r < s.bq; r += kThreads) {
    t.lse[r] = r < nq ? lse[i0 + r] : 0.0f;
    t.delta[r] = r < nq ? delta[i0 + r] : 0.0f;
  }
}

template <typename E>
__device__ void scores_and_dp(BwdSmem<E>& t, const Shape& s) {
  tile_mma<E, false, true>(t.s, t.lds, t.q, t.ldh, t.k, t.ldh, s.bq, s.bk, s.hdp, s.scale, false);
  tile_mma<E, false, true>(t.dp, t.lds, t.dout, t.ldh, t.v, t.ldh, s.bq, s.bk, s.hdp, 1.0f, false);
}

// Stores (or with `add` adds) rows x hd of an fp32 tile into a [*, hd] view with row stride ld.
template <typename G>
__device__ void store_tile(G* dst, int64_t ld, const float* src, int lds, int rows, int hd,
                           bool add) {
  for (int x = threadIdx.x; x < rows * hd; x += kThreads) {
    const int r = x / hd, e = x % hd;
    const float v = src[r * lds + e];
    dst[r * ld + e] = from_float<G>(add ? to_float(dst[r * ld + e]) + v : v);
  }
}

// One block per (key tile, b·NKV + key/value head): dK and dV of the tile sum the query tiles of
// every query head of the group, in head order, in the block's fp32 accumulators.
template <typename E, typename G>
__global__ void __launch_bounds__(kThreads)
    dkdv_kernel(AttentionGrads<G> g, const E* dout, AttentionOperands<E> x, const float* lse,
                const float* delta, Shape s, DropoutParams drop) {
  extern __shared__ __align__(128) unsigned char smem[];
  Carve c{smem};
  BwdSmem<E> t(c, s, true);
  const AttentionBlock& blk = s.blk;
  const int64_t bkv = folded_y();
  if (bkv >= int64_t{s.BH / s.rep()}) return;  // padding of the last grid plane
  const int b = static_cast<int>(bkv / s.NKV), h0 = static_cast<int>(bkv % s.NKV) * s.rep();
  const int j0 = blockIdx.x * s.bk, nk = min(s.bk, blk.Tk - j0);
  const E* k = x.k + b * x.batch_kv + s.kv_col(h0);
  const E* v = x.v + b * x.batch_kv + s.kv_col(h0);
  load_tile(t.k, t.ldh, k + j0 * blk.ldkv, blk.ldkv, nk, s.bk, s.hd, s.hdp);
  load_tile(t.v, t.ldh, v + j0 * blk.ldkv, blk.ldkv, nk, s.bk, s.hd, s.hdp);
  fill(t.acc_a, t.lda, s.bk, s.hdp, 0.0f);
  fill(t.acc_b, t.lda, s.bk, s.hdp, 0.0f);
  for (int h = h0; h < h0 + s.rep(); ++h) {
    const int bh = b * s.NH + h;
    const E* q = x.q + b * x.batch_q + int64_t{h} * s.hd;
    const E* dy = dout + int64_t{b} * blk.Tq * s.C + int64_t{h} * s.hd;
    const float* L = lse + int64_t{bh} * blk.ld_lse;
    const float* D = delta + int64_t{bh} * blk.Tq;
    for (int i0 = blk.first_row(j0) / s.bq * s.bq; i0 < blk.Tq; i0 += s.bq) {
      const int nq = min(s.bq, blk.Tq - i0);
      load_query_tile(t, s, q, dy, L, D, i0, nq);
      __syncthreads();
      scores_and_dp(t, s);
      __syncthreads();
      probabilities_and_dscores(t, s, bh, i0, nq, j0, nk, drop);
      __syncthreads();
      // dV += dropout(P)^T dO, dK += dS^T Q scale
      tile_mma<E, true, false>(t.acc_b, t.lda, t.p, t.ldp, t.dout, t.ldh, s.bk, s.hdp, s.bq, 1.0f,
                               true);
      tile_mma<E, true, false>(t.acc_a, t.lda, t.ds, t.ldp, t.q, t.ldh, s.bk, s.hdp, s.bq, s.scale,
                               true);
      __syncthreads();
    }
  }
  const int64_t at = b * g.batch_kv + s.kv_col(h0) + j0 * g.ldkv;
  store_tile(g.k + at, g.ldkv, t.acc_a, t.lda, nk, s.hd, g.add);
  store_tile(g.v + at, g.ldkv, t.acc_b, t.lda, nk, s.hd, g.add);
}

template <typename E, typename G>
__global__ void __launch_bounds__(kThreads)
    dq_kernel(AttentionGrads<G> g, const E* dout, AttentionOperands<E> x, const float* lse,
              const float* delta, Shape s, DropoutParams drop) {
  extern __shared__ __align__(128) unsigned char smem[];
  Carve c{smem};
  BwdSmem<E> t(c, s, false);
  const AttentionBlock& blk = s.blk;
  const int qb = gridDim.x - 1 - blockIdx.x;  // the longest rows first
  if (folded_y() >= s.BH) return;             // padding of the last grid plane
  const int bh = static_cast<int>(folded_y()), b = bh / s.NH, h = bh % s.NH;
  const int i0 = qb * s.bq, nq = min(s.bq, blk.Tq - i0), keys = blk.keys(i0 + nq);
  const E* q = x.q + b * x.batch_q + int64_t{h} * s.hd;
  const E* dy = dout + int64_t{b} * blk.Tq * s.C + int64_t{h} * s.hd;
  const E* k = x.k + b * x.batch_kv + s.kv_col(h);
  const E* v = x.v + b * x.batch_kv + s.kv_col(h);
  load_query_tile(t, s, q, dy, lse + int64_t{bh} * blk.ld_lse, delta + int64_t{bh} * blk.Tq, i0,
                  nq);
  fill(t.acc_a, t.lda, s.bq, s.hdp, 0.0f);
  for (int j0 = 0; j0 < keys; j0 += s.bk) {
    const int nk = min(s.bk, keys - j0);
    load_tile(t.k, t.ldh, k + j0 * blk.ldkv, blk.ldkv, nk, s.bk, s.hd, s.hdp);
    load_tile(t.v, t.ldh, v + j0 * blk.ldkv, blk.ldkv, nk, s.bk, s.hd, s.hdp);
    __syncthreads();
    scores_and_dp(t, s);
    __syncthreads();
    probabilities_and_dscores(t, s, bh, i0, nq, j0, nk, drop);
    __syncthreads();
    // dQ += dS K scale
    tile_mma<E, false, false>(t.acc_a, t.lda, t.ds, t.ldp, t.k, t.ldh, s.bq, s.hdp, s.bk, s.scale,
                              true);
    __syncthreads();
  }
  store_tile(g.q + b * g.batch_q + int64_t{h} * s.hd + i0 * g.ldq, g.ldq, t.acc_a, t.lda, nq, s.hd,
             g.add);
}

int smem_optin_limit() {
  int dev = 0, bytes = 0;
  ZT_CU_CUDA_CHECK(cudaGetDevice(&dev));
  ZT_CU_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return bytes;
}

// The shape with the largest square tile (64, 32 or 16) whose shared memory (`bytes` of it) is
// at most `limit`; its bt (tile) is 0 when none is.
template <typename SmemBytes>
Shape fit_shape(int B, int T, int C, int NH, int NKV, SmemBytes bytes, size_t limit, size_t* smem) {
  const int hd = C / NH;
  for (int tile = 64; tile >= 16; tile /= 2) {
    const Shape s{T,
                  C,
                  NH,
                  hd,
                  (hd + 15) / 16 * 16,
                  int64_t{B} * NH,
                  int64_t{C} + 2 * int64_t{NKV} * hd,
                  1.0f / std::sqrt(static_cast<float>(hd)),
                  tile,
                  tile,
                  NKV,
                  int64_t{NKV} * hd,
                  AttentionBlock::whole(T, int64_t{C} + 2 * int64_t{NKV} * hd)};
    *smem = bytes(s);
    if (*smem <= limit) return s;
  }
  Shape none{};
  none.bq = none.bk = 0;
  return none;
}

// fit_shape under the device's opt-in limit, or a one-line error naming the head size.
template <typename SmemBytes>
Shape make_shape(int B, int T, int C, int NH, int NKV, const DropoutParams& drop, SmemBytes bytes,
                 size_t* smem) {
  ZT_CU_CHECK(B > 0 && T > 0 && NH > 0 && C > 0 && C % NH == 0 && NKV > 0 && NH % NKV == 0,
              cat("attention: bad shape B=", B, " T=", T, " C=", C, " NH=", NH, " NKV=", NKV));
  ZT_CU_CHECK(drop.p >= 0.0f && drop.p < 1.0f,
              cat("attention: dropout p=", drop.p, " outside [0, 1)"));
  const size_t limit = static_cast<size_t>(smem_optin_limit());
  const Shape s = fit_shape(B, T, C, NH, NKV, bytes, limit, smem);
  ZT_CU_CHECK(s.bq > 0, cat("attention: head size ", C / NH, " needs more shared memory than the ",
                            limit, " bytes a block may use"));
  return s;
}

// Whether every region of a carve is 128-byte aligned (with a null base the pointers are the
// offsets) and the tiles' leading dimensions suit WMMA: a multiple of 8 elements for 16-bit
// operands, of 4 for fp32 accumulators (so every 16-row fragment starts 32-byte aligned).
template <typename E>
bool carve_aligned(const Shape& s) {
  auto at128 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 128 == 0; };
  Carve c{nullptr};
  const FwdSmem<E> f(c, s);
  Carve c2{nullptr};
  const BwdSmem<E> b(c2, s, true);
  constexpr int e16 = sizeof(E) == 2 ? 8 : 4;
  return at128(f.q) && at128(f.k) && at128(f.v) && at128(f.p) && at128(f.s) && at128(f.o) &&
         at128(f.m) && at128(b.q) && at128(b.dout) && at128(b.k) && at128(b.v) && at128(b.p) &&
         at128(b.ds) && at128(b.s) && at128(b.dp) && at128(b.acc_a) && at128(b.acc_b) &&
         f.ldh % e16 == 0 && f.ldp % e16 == 0 && f.ldo % 4 == 0 && f.lds % 4 == 0 &&
         b.ldh % e16 == 0 && b.ldp % e16 == 0 && b.lda % 4 == 0 && b.lds % 4 == 0;
}

template <typename E>
AttentionTiling tiling(int hd, size_t limit) {
  AttentionTiling t;
  const Shape f = fit_shape(
      1, 1, hd, 1, 1, [](const Shape& x) { return fwd_smem_bytes<E>(x); }, limit, &t.forward_bytes);
  const Shape b = fit_shape(
      1, 1, hd, 1, 1, [](const Shape& x) { return bwd_smem_bytes<E>(x, true); }, limit,
      &t.backward_bytes);
  t.forward_tile = f.bq;
  t.backward_tile = b.bq;
  if (b.bq > 0) t.dq_bytes = bwd_smem_bytes<E>(b, false);
  t.aligned = (f.bq == 0 || carve_aligned<E>(f)) && (b.bq == 0 || carve_aligned<E>(b));
  return t;
}

template <typename Kernel>
void allow_smem(Kernel kernel, size_t bytes) {
  ZT_CU_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
}

// The shape of a block's launches: one sample of blk.Tq query rows.
template <typename SmemBytes>
Shape block_shape(int C, int NH, int NKV, const AttentionBlock& blk, const DropoutParams& drop,
                  SmemBytes bytes, size_t* smem) {
  ZT_CU_CHECK(NH > 0 && blk.valid(C, int64_t{NKV} * (C / NH)),
              cat("attention block: bad placement Tq=", blk.Tq, " Tk=", blk.Tk,
                  " q_pos=", blk.q_pos, " k_pos=", blk.k_pos, " seq=", blk.seq));
  Shape s = make_shape(1, blk.Tq, C, NH, NKV, drop, bytes, smem);
  s.blk = blk;
  return s;
}

template <typename E>
AttentionOperands<E> whole_sequences(const E* qkv, const Shape& s) {
  const int64_t batch = int64_t{s.T} * s.C3;
  return {qkv, qkv + s.C, qkv + s.C + s.Ckv, batch, batch};
}

template <typename E, typename Out>
void launch_forward(Out* out, float* lse, const AttentionOperands<E>& x, const Shape& s,
                    size_t smem, const DropoutParams& drop, bool merge, cudaStream_t stream) {
  allow_smem(forward_kernel<E, Out>, smem);
  const dim3 grid = fold_y(static_cast<unsigned>((s.blk.Tq + s.bq - 1) / s.bq), s.BH);
  forward_kernel<E, Out><<<grid, kThreads, smem, stream>>>(out, lse, x, s, drop, merge);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

// delta, then dK and dV, then dQ (kernels in stream order).
template <typename E, typename G>
void launch_backward(const AttentionGrads<G>& g, float* delta, const E* dout, const E* out,
                     const AttentionOperands<E>& x, const float* lse, const Shape& s, size_t smem,
                     const DropoutParams& drop, cudaStream_t stream) {
  const int64_t rows = s.BH * s.blk.Tq;
  delta_kernel<E><<<static_cast<unsigned>((rows * 32 + 255) / 256), 256, 0, stream>>>(delta, dout,
                                                                                      out, s, rows);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
  allow_smem(dkdv_kernel<E, G>, smem);
  const dim3 grid_k = fold_y(static_cast<unsigned>((s.blk.Tk + s.bk - 1) / s.bk), s.BH / s.rep());
  dkdv_kernel<E, G><<<grid_k, kThreads, smem, stream>>>(g, dout, x, lse, delta, s, drop);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
  const size_t smem_q = bwd_smem_bytes<E>(s, false);
  allow_smem(dq_kernel<E, G>, smem_q);
  const dim3 grid_q = fold_y(static_cast<unsigned>((s.blk.Tq + s.bq - 1) / s.bq), s.BH);
  dq_kernel<E, G><<<grid_q, kThreads, smem_q, stream>>>(g, dout, x, lse, delta, s, drop);
  ZT_CU_CUDA_CHECK(cudaGetLastError());
}

}  // namespace
}  // namespace detail

AttentionTiling attention_tiling(int hd, DType t, size_t smem_limit) {
  switch (t) {
    case DType::F32:
      return detail::tiling<float>(hd, smem_limit);
    case DType::BF16:
      return detail::tiling<bf16>(hd, smem_limit);
    case DType::F16:
      return detail::tiling<fp16>(hd, smem_limit);
  }
  return {};
}

template <typename E>
void Kernels::attention_forward(E* out, float* lse, const E* qkv, int B, int T, int C, int NH,
                                int NKV, const DropoutParams& drop, cudaStream_t stream) {
  size_t smem = 0;
  const detail::Shape s = detail::make_shape(
      B, T, C, NH, NKV, drop, [](const detail::Shape& x) { return detail::fwd_smem_bytes<E>(x); },
      &smem);
  detail::launch_forward(out, lse, detail::whole_sequences(qkv, s), s, smem, drop, false, stream);
}

template <typename E>
void Kernels::attention_backward(E* dqkv, float* delta, const E* dout, const E* qkv, const E* out,
                                 const float* lse, int B, int T, int C, int NH, int NKV,
                                 const DropoutParams& drop, cudaStream_t stream) {
  size_t smem = 0;
  const detail::Shape s = detail::make_shape(
      B, T, C, NH, NKV, drop,
      [](const detail::Shape& x) { return detail::bwd_smem_bytes<E>(x, true); }, &smem);
  const int64_t batch = int64_t{T} * s.C3;
  const AttentionGrads<E> g{dqkv, dqkv + C, dqkv + C + s.Ckv, s.C3, s.C3, batch, batch, false};
  detail::launch_backward(g, delta, dout, out, detail::whole_sequences(qkv, s), lse, s, smem, drop,
                          stream);
}

template <typename E>
void Kernels::attention_block_forward(float* out, float* lse, const E* q, const E* kv, int C,
                                      int NH, int NKV, const AttentionBlock& blk, bool merge,
                                      const DropoutParams& drop, cudaStream_t stream) {
  size_t smem = 0;
  const detail::Shape s = detail::block_shape(
      C, NH, NKV, blk, drop, [](const detail::Shape& x) { return detail::fwd_smem_bytes<E>(x); },
      &smem);
  const AttentionOperands<E> x{q, kv, kv + s.Ckv, 0, 0};
  detail::launch_forward(out, lse, x, s, smem, drop, merge, stream);
}

template <typename E>
void Kernels::attention_block_backward(float* dq, float* dkv, float* delta, const E* dout,
                                       const E* out, const E* q, const E* kv, const float* lse,
                                       int C, int NH, int NKV, const AttentionBlock& blk,
                                       const DropoutParams& drop, cudaStream_t stream) {
  size_t smem = 0;
  const detail::Shape s = detail::block_shape(
      C, NH, NKV, blk, drop,
      [](const detail::Shape& x) { return detail::bwd_smem_bytes<E>(x, true); }, &smem);
  const AttentionOperands<E> x{q, kv, kv + s.Ckv, 0, 0};
  const AttentionGrads<float> g{dq, dkv, dkv + s.Ckv, C, 2 * s.Ckv, 0, 0, true};
  detail::launch_backward(g, delta, dout, out, x, lse, s, smem, drop, stream);
}

#define ZT_ATTENTION(E)                                                                            \
  template void Kernels::attention_forward<E>(E*, float*, const E*, int, int, int, int, int,       \
                                              const DropoutParams&, cudaStream_t);                 \
  template void Kernels::attention_backward<E>(E*, float*, const E*, const E*, const E*,           \
                                               const float*, int, int, int, int, int,              \
                                               const DropoutParams&, cudaStream_t);                \
  template void Kernels::attention_block_forward<E>(float*, float*, const E*, const E*, int, int,  \
                                                    int, const AttentionBlock&, bool,              \
                                                    const DropoutParams&, cudaStream_t);           \
  template void Kernels::attention_block_backward<E>(                                              \
      float*, float*, float*, const E*, const E*, const E*, const E*, const float*, int, int, int, \
      const AttentionBlock&, const DropoutParams&, cudaStream_t);
ZT_ATTENTION(float)
ZT_ATTENTION(bf16)
ZT_ATTENTION(fp16)
#undef ZT_ATTENTION

}  // namespace zt::cuda
