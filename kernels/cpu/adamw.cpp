#include <cstdint>

#include "kernels/common/adamw.h"
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

}  // namespace zt::cpu
