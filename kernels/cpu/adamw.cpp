#include <omp.h>

#include <algorithm>
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

// Elements per unit of a thread's share: 16 floats, one 64-byte cache line, so two threads
// write the same line only where a segment starts off a line boundary.
constexpr int64_t kShareUnit = 16;

// The segments laid end to end, each thread of one team a contiguous, equal share of the total
// (a memory-bound loop: every thread moves the same bytes). One parallel region for the whole
// table instead of one per segment: no join per segment, and segments under kParallelMin are
// split across the team too instead of running on one thread while the others wait.
template <typename G>
void adamw_segments(const AdamWSegment* segs, int count, AdamWConsts c) {
  int64_t total = 0;
  for (int k = 0; k < count; ++k) {
    ZT_CHECK(segs[k].n >= 0, "adamw: segment {} has {} elements", k, segs[k].n);
    total += segs[k].n;
  }
#pragma omp parallel if (total >= detail::kParallelMin) firstprivate(c)
  {
    const int64_t units = (total + kShareUnit - 1) / kShareUnit;
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t lo = std::min(total, units * t / nt * kShareUnit);
    const int64_t hi = std::min(total, units * (t + 1) / nt * kShareUnit);
    int64_t base = 0;  // where segment k starts in the concatenation
    for (int k = 0; k < count && base < hi; base += segs[k].n, ++k) {
      const AdamWSegment& s = segs[k];
      const int64_t a = std::max(lo, base) - base, b = std::min(hi, base + s.n) - base;
      if (a >= b) continue;
      c.weight_decay = s.weight_decay;
      adamw_run(s.param + a, s.m + a, s.v + a, static_cast<const G*>(s.grad) + a, b - a, c);
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
