#include <cstdint>

#include "kernels/common/rope.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

namespace {

// Rotates the q heads and the k heads of every row of qkv by their positions: one task per
// token row (position pos0 + its index in its sample), the row's hd/2 angles computed once and
// applied to its NH + NKV heads.
template <typename T>
void rope_rows(T* qkv, int B, int Tn, int pos0, int NH, int NKV, int hd, const RopeFreqs& freqs,
               float sign) {
  ZT_CHECK(B > 0 && Tn > 0 && NH > 0 && NKV > 0 && hd > 0 && hd % 2 == 0,
           "rope: bad shape B={} T={} NH={} NKV={} hd={}", B, Tn, NH, NKV, hd);
  ZT_CHECK(freqs.pairs == hd / 2, "rope: {} inverse frequencies for head dimension {}", freqs.pairs,
           hd);
  const int half = hd / 2, heads = NH + NKV;
  const int64_t ld = int64_t{NH + 2 * NKV} * hd, rows = int64_t{B} * Tn;
#pragma omp parallel for schedule(static) if (rows * heads * hd >= detail::kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    float* cs = detail::thread_buffer<float, 2>(static_cast<size_t>(hd));
    const int pos = pos0 + static_cast<int>(r % Tn);
    for (int i = 0; i < half; ++i) rope_cos_sin(pos, freqs.inv[i], cs[i], cs[half + i]);
    T* row = qkv + r * ld;
    for (int h = 0; h < heads; ++h) {
      T* x = row + int64_t{h} * hd;  // q heads, then the k heads right after them
      for (int i = 0; i < half; ++i) {
        float y0 = 0.0f, y1 = 0.0f;
        rope_rotate(to_float(x[i]), to_float(x[half + i]), cs[i], cs[half + i], sign, y0, y1);
        x[i] = from_float<T>(y0);
        x[half + i] = from_float<T>(y1);
      }
    }
  }
}

}  // namespace

template <typename T>
void Kernels::rope_forward(T* qkv, int B, int Tn, int NH, int NKV, int hd, const RopeFreqs& freqs,
                           Exec) {
  rope_rows(qkv, B, Tn, 0, NH, NKV, hd, freqs, 1.0f);
}

template <typename T>
void Kernels::rope_backward(T* dqkv, int B, int Tn, int NH, int NKV, int hd, const RopeFreqs& freqs,
                            Exec) {
  rope_rows(dqkv, B, Tn, 0, NH, NKV, hd, freqs, -1.0f);
}

template <typename T>
void Kernels::rope_forward_at(T* qkv, int n, int pos0, int NH, int NKV, int hd,
                              const RopeFreqs& freqs, Exec) {
  ZT_CHECK(pos0 >= 0, "rope_forward_at: position {} < 0", pos0);
  rope_rows(qkv, 1, n, pos0, NH, NKV, hd, freqs, 1.0f);
}

template <typename T>
void Kernels::rope_backward_at(T* dqkv, int n, int pos0, int NH, int NKV, int hd,
                               const RopeFreqs& freqs, Exec) {
  ZT_CHECK(pos0 >= 0, "rope_backward_at: position {} < 0", pos0);
  rope_rows(dqkv, 1, n, pos0, NH, NKV, hd, freqs, -1.0f);
}

#define ZT_ROPE(T)                                                                          \
  template void Kernels::rope_forward<T>(T*, int, int, int, int, int, const RopeFreqs&,     \
                                         Kernels::Exec);                                    \
  template void Kernels::rope_backward<T>(T*, int, int, int, int, int, const RopeFreqs&,    \
                                          Kernels::Exec);                                   \
  template void Kernels::rope_forward_at<T>(T*, int, int, int, int, int, const RopeFreqs&,  \
                                            Kernels::Exec);                                 \
  template void Kernels::rope_backward_at<T>(T*, int, int, int, int, int, const RopeFreqs&, \
                                             Kernels::Exec);
ZT_ROPE(float)
ZT_ROPE(bf16)
ZT_ROPE(fp16)
#undef ZT_ROPE

}  // namespace zt::cpu
