#include <cstdint>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

template <typename E>
void Kernels::embedding_forward(E* out, const int32_t* tokens, const E* wte, const E* wpe, int B,
                                int T, int C, int v_begin, int v_local, Exec) {
  ZT_CHECK(B > 0 && T > 0 && C > 0 && v_local >= 0, "embedding_forward: bad shape");
  const int BT = B * T;
#pragma omp parallel for schedule(static) if (int64_t{BT} * C >= detail::kParallelMin)
  for (int bt = 0; bt < BT; ++bt) {
    E* o = out + int64_t{bt} * C;
    const int64_t row = int64_t{tokens[bt]} - v_begin;
    const bool in_range = row >= 0 && row < v_local;
    const E* e = wte + (in_range ? row : 0) * C;
    const E* p = wpe != nullptr ? wpe + int64_t{bt % T} * C : nullptr;
    if (in_range && p != nullptr) {
      for (int c = 0; c < C; ++c) o[c] = from_float<E>(to_float(e[c]) + to_float(p[c]));
    } else if (in_range) {
      for (int c = 0; c < C; ++c) o[c] = e[c];
    } else if (p != nullptr) {
      for (int c = 0; c < C; ++c) o[c] = p[c];
    } else {
      for (int c = 0; c < C; ++c) o[c] = from_float<E>(0.0f);
    }
  }
}

// Deterministic without atomics: the channels are split into fixed blocks, a block belongs to
// one thread, and within it the tokens are added in (b, t) order — the same order whatever the
// thread count.
template <typename E>
void Kernels::embedding_backward(float* dwte, float* dwpe, const E* dout, const int32_t* tokens,
                                 int B, int T, int C, int v_begin, int v_local, Exec) {
  ZT_CHECK(B > 0 && T > 0 && C > 0 && v_local >= 0, "embedding_backward: bad shape");
  constexpr int kBlock = 64;
  const int nblocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (int64_t{B} * T * C >= detail::kParallelMin)
  for (int blk = 0; blk < nblocks; ++blk) {
    const int c0 = blk * kBlock;
    const int len = C - c0 < kBlock ? C - c0 : kBlock;
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t < T; ++t) {
        const int64_t bt = int64_t{b} * T + t;
        const E* d = dout + bt * C + c0;
        const int64_t row = int64_t{tokens[bt]} - v_begin;
        if (row >= 0 && row < v_local) {
          float* g = dwte + row * C + c0;
          for (int j = 0; j < len; ++j) g[j] += to_float(d[j]);
        }
        if (dwpe != nullptr) {
          float* g = dwpe + int64_t{t} * C + c0;
          for (int j = 0; j < len; ++j) g[j] += to_float(d[j]);
        }
      }
    }
  }
}

#define ZT_EMBEDDING(E)                                                                            \
  template void Kernels::embedding_forward<E>(E*, const int32_t*, const E*, const E*, int, int,    \
                                              int, int, int, Kernels::Exec);                       \
  template void Kernels::embedding_backward<E>(float*, float*, const E*, const int32_t*, int, int, \
                                               int, int, int, Kernels::Exec);
ZT_EMBEDDING(float)
ZT_EMBEDDING(bf16)
ZT_EMBEDDING(fp16)
#undef ZT_EMBEDDING

}  // namespace zt::cpu
