#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "kernels/common/adamw.h"
#include "kernels/common/multi_tensor.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {
namespace {

// AdamW over n elements of one segment. The four arrays are distinct buffers, and saying so
// (__restrict, and the constants copied into a local the stores cannot reach) lets the compiler
// vectorise the loop without a runtime overlap check and keep m and v in registers between their
// store and their next use. Every element still goes through adamw_update alone, so the bits are
// those of the scalar loop. Not inlined: GCC drops __restrict when it inlines the call into the
// parallel region.
template <typename G>
[[gnu::noinline]] void adamw_run(float* __restrict param, float* __restrict m, float* __restrict v,
                                 const G* __restrict g, int64_t n, const AdamWConsts& consts) {
  const AdamWConsts c = consts;
  for (int64_t i = 0; i < n; ++i) adamw_update(param[i], m[i], v[i], to_float(g[i]), c);
}

// The segments laid end to end and cut into chunks that the team's threads take in turn, one
// parallel region for the whole table: no join per segment, segments under kParallelMin are
// shared by the team too, and a thread that the OS preempts (a host busy with the rest of
// training: data loading, copies, communication) leaves its remaining chunks to the others
// instead of holding up the step, as an equal static share would. A chunk is at most 2^16
// elements (1.75 MiB moved with fp32 gradients: one atomic increment per tens of microseconds
// of work) and at least 8 per thread, in whole 64-byte lines of floats.
template <typename G>
void adamw_segments(const AdamWSegment* segs, int count, AdamWConsts c) {
  int64_t total = 0;
  for (int k = 0; k < count; ++k) {
    ZT_CHECK(segs[k].n >= 0, "adamw: segment {} has {} elements", k, segs[k].n);
    total += segs[k].n;
  }
  constexpr int64_t kLine = 16, kMaxChunk = int64_t{1} << 16;
  std::atomic<int64_t> next{0};
#pragma omp parallel if (total >= detail::kParallelMin) firstprivate(c)
  {
    const int64_t per_thread = total / (8 * int64_t{omp_get_num_threads()});
    const int64_t chunk = std::clamp((per_thread + kLine - 1) / kLine * kLine, kLine, kMaxChunk);
    int k = 0;
    int64_t base = 0;  // where segment k starts; chunks come in increasing order to each thread
    for (int64_t lo = next.fetch_add(chunk, std::memory_order_relaxed); lo < total;
         lo = next.fetch_add(chunk, std::memory_order_relaxed)) {
      const int64_t hi = std::min(total, lo + chunk);
      for (; base + segs[k].n <= lo; ++k) base += segs[k].n;
      int64_t jbase = base;
      for (int j = k; j < count && jbase < hi; jbase += segs[j].n, ++j) {
        const AdamWSegment& s = segs[j];
        const int64_t a = std::max(lo, jbase) - jbase, b = std::min(hi, jbase + s.n) - jbase;
        if (a >= b) continue;
        c.weight_decay = s.weight_decay;
        adamw_run(s.param + a, s.m + a, s.v + a, static_cast<const G*>(s.grad) + a, b - a, c);
      }
    }
  }
}

}  // namespace

void Kernels::adamw(float* param, float* m, float* v, const float* g, int64_t n,
                    const AdamWParams& p, Exec) {
  ZT_CHECK(p.step >= 1, "adamw: step {} < 1", p.step);
  const AdamWSegment seg{param, m, v, g, n, p.weight_decay};
  adamw_segments<float>(&seg, 1, adamw_consts(p));
}

template <typename G>
void Kernels::adamw_multi(const AdamWSegment* segs, int count, const AdamWParams& p, Exec) {
  ZT_CHECK(p.step >= 1, "adamw_multi: step {} < 1", p.step);
  adamw_segments<G>(segs, count, adamw_consts(p));
}

template void Kernels::adamw_multi<float>(const AdamWSegment*, int, const AdamWParams&, Exec);
template void Kernels::adamw_multi<bf16>(const AdamWSegment*, int, const AdamWParams&, Exec);
template void Kernels::adamw_multi<fp16>(const AdamWSegment*, int, const AdamWParams&, Exec);

}  // namespace zt::cpu
