#pragma once
// The flags `zerotron estimate` and `zerotron simulate` share: the model (or --num-parameters
// with the shape rule), the layout, precision, micro batch, checkpointing and bucket options,
// parsed into the planner's PlanInput. Declared once here so the two commands cannot drift.
#include <string_view>
#include <vector>

#include "apps/cli_flags.h"
#include "src/planner/memory_plan.h"

namespace zt::app {

std::vector<FlagSpec> plan_flag_specs();
// "5e8", "32GB", "32e9", "1.5GiB": a byte or element count (fallback when the flag is absent).
double size_value(const ParsedFlags& f, std::string_view command, std::string_view name,
                  double fallback);
PlanInput plan_input_from_flags(const ParsedFlags& f, std::string_view command);
// Pads the vocabulary for tp and checks the shape, as the trainer does; call after any change of
// model or tp.
void finish_plan_input(PlanInput& in, std::string_view command);

}  // namespace zt::app
