#pragma once
// The largest model (by the shape rule) a layout can hold in a device memory: the question of the
// ZeRO paper's Table 2. Bisection over the parameter count; the plan is monotone in it up to the
// shape rule's discreteness (a few per mille).
#include <cstdint>

#include "src/planner/memory_plan.h"

namespace zt {

enum class FitCriterion : uint8_t {
  ModelStates,  // params + grads + optimizer states (the paper's Table 2 "theoretical")
  Device,       // everything the device holds: model states, activations, checkpoints, buffers
};

// Largest num_parameters (of the whole model) whose plan fits `device_bytes`; `in`'s model is
// reshaped for each candidate (vocab and seq length kept). 0 when even 1e6 does not fit.
int64_t max_parameters(const PlanInput& in, double device_bytes, FitCriterion criterion);

bool plan_fits(const MemoryPlan& p, double device_bytes, FitCriterion criterion);

}  // namespace zt
