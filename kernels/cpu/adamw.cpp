#include <cstdint>

#include "kernels/common/adamw.h"
#include "kernels/common/multi_tensor.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

void Kernels::adamw(float* param, float* m, float* v, const float* g, int64_t n,
                    const AdamWParams& p, Exec) {
  ZT_CHECK(p.step >= 1, "adamw: step {} < 1", p.step);
  const AdamWConsts c = adamw_consts(p);
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) adamw_update(param[i], m[i], v[i], g[i], c);
}

template <typename G>
void Kernels::adamw_multi(const AdamWSegment* segs, int count, const AdamWParams& p, Exec) {
  ZT_CHECK(p.step >= 1, "adamw_multi: step {} < 1", p.step);
  AdamWConsts c = adamw_consts(p);
  for (int k = 0; k < count; ++k) {
    const AdamWSegment& s = segs[k];
    c.weight_decay = s.weight_decay;
    const auto* g = static_cast<const G*>(s.grad);
    const int64_t n = s.n;
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
    for (int64_t i = 0; i < n; ++i) adamw_update(s.param[i], s.m[i], s.v[i], to_float(g[i]), c);
  }
}

template void Kernels::adamw_multi<float>(const AdamWSegment*, int, const AdamWParams&, Exec);
template void Kernels::adamw_multi<bf16>(const AdamWSegment*, int, const AdamWParams&, Exec);
template void Kernels::adamw_multi<fp16>(const AdamWSegment*, int, const AdamWParams&, Exec);

}  // namespace zt::cpu
