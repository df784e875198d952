#include "src/planner/max_model.h"

#include <cmath>

#include "src/planner/shape_rule.h"

namespace zt {

bool plan_fits(const MemoryPlan& p, double device_bytes, FitCriterion criterion) {
  const size_t used = criterion == FitCriterion::ModelStates ? p.model_states() : p.device_total();
  return static_cast<double>(used) <= device_bytes;
}

int64_t max_parameters(const PlanInput& base, double device_bytes, FitCriterion criterion) {
  auto plan_for = [&](double target, PlanInput& in) {
    in = base;
    shape_for_parameters(target, in.model, in.tp);
    in.model.padded_vocab_size =
        padded_vocab_size(in.model.vocab_size, in.make_vocab_divisible_by, in.tp);
    return plan_memory(in);
  };
  PlanInput in;
  double lo = 1e6, hi = 1e6;
  if (!plan_fits(plan_for(lo, in), device_bytes, criterion)) return 0;
  while (hi < 1e16 && plan_fits(plan_for(hi, in), device_bytes, criterion)) hi *= 2;
  lo = hi / 2;
  // To 1e-5 relative: finer than the shape rule's own steps (one layer of a 1e6-parameter model).
  for (int i = 0; i < 60 && hi > lo * (1 + 1e-5); ++i) {
    const double mid = 0.5 * (lo + hi);
    (plan_fits(plan_for(mid, in), device_bytes, criterion) ? lo : hi) = mid;
  }
  return plan_for(lo, in).num_parameters;
}

}  // namespace zt
