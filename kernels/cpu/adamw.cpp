#include <cmath>
#include <cstdint>

#include "kernels/common/adamw.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "src/core/error.h"

namespace zt::cpu {

void adamw(float* param, float* m, float* v, const float* g, int64_t n, const AdamWParams& p) {
  ZT_CHECK(p.step >= 1, "adamw: step {} < 1", p.step);
  const double t = static_cast<double>(p.step);
  const AdamWConsts c{p.lr,
                      p.beta1,
                      p.beta2,
                      p.eps,
                      p.weight_decay,
                      p.grad_scale,
                      static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(p.beta1), t))),
                      static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(p.beta2), t)))};
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) adamw_update(param[i], m[i], v[i], g[i], c);
}

}  // namespace zt::cpu
