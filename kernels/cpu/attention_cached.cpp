// Attention of new query rows against a key/value cache (generation), one task per (query row,
// query head, its key/value head read in place): the row's scaled scores against every key it sees,
// their max, the probabilities exp(s - max) and their sum (kernels/common/attention.h), then the
// probability-weighted sum of the value rows, divided by that sum and rounded once. A decoding step
// has one query row and a few hundred keys: plain loops, no tiles.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/common/attention.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

template <typename T>
void Kernels::attention_cached_forward(T* out, const T* q, int ldq, const T* k, const T* v, int n,
                                       int past, int C, int NH, int NKV, Exec) {
  ZT_CHECK(
      n > 0 && past >= 0 && NH > 0 && C > 0 && C % NH == 0 && NKV > 0 && NH % NKV == 0 && ldq >= C,
      "attention_cached_forward: bad shape n={} past={} C={} NH={} NKV={} ldq={}", n, past, C, NH,
      NKV, ldq);
  const int hd = C / NH, keys_max = attention_cached_keys(past, n - 1);
  const int64_t ckv = int64_t{NKV} * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
#pragma omp parallel for schedule(static) if (int64_t{n} * NH * keys_max * hd > \
                                              detail::kParallelMin)
  for (int task = 0; task < n * NH; ++task) {
    const int i = task / NH, h = task % NH, keys = attention_cached_keys(past, i);
    float* s = detail::thread_buffer<float, 0>(static_cast<size_t>(keys) + hd);
    float* acc = s + keys;
    const T* qi = q + int64_t{i} * ldq + int64_t{h} * hd;
    const int64_t kv = int64_t{attention_kv_head(h, NH, NKV)} * hd;
    float m = kMaskedScore;
    for (int j = 0; j < keys; ++j) {
      s[j] = attention_score(qi, k + int64_t{j} * ckv + kv, hd, scale);
      m = std::max(m, s[j]);
    }
    float l = 0.0f;
    for (int j = 0; j < keys; ++j) {
      s[j] = online_softmax_prob(s[j], m);
      l += s[j];
    }
    std::fill(acc, acc + hd, 0.0f);
    for (int j = 0; j < keys; ++j) {
      const T* vj = v + int64_t{j} * ckv + kv;
      for (int e = 0; e < hd; ++e) acc[e] += s[j] * to_float(vj[e]);
    }
    T* o = out + int64_t{i} * C + int64_t{h} * hd;
    for (int e = 0; e < hd; ++e) o[e] = from_float<T>(acc[e] / l);
  }
}

#define ZT_ATTENTION_CACHED(T)                                                                   \
  template void Kernels::attention_cached_forward<T>(T*, const T*, int, const T*, const T*, int, \
                                                     int, int, int, int, Kernels::Exec);
ZT_ATTENTION_CACHED(float)
ZT_ATTENTION_CACHED(bf16)
ZT_ATTENTION_CACHED(fp16)
#undef ZT_ATTENTION_CACHED

}  // namespace zt::cpu
