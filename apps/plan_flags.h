#pragma once
// The flags of `zerotron estimate` and `zerotron simulate`. The model, layout, precision, batch,
// checkpointing, bucket and memory options are the training options themselves (the one table
// in src/config/options.inc: same names, defaults and checks as `train`, --config included);
// only what planning adds is declared here: --num-parameters (a shape from a size), the world
// (--data-parallel-size or --world-size, which `train` takes from mpirun) and each command's own
// switches.
#include <optional>
#include <string_view>
#include <vector>

#include "apps/commands.h"
#include "src/config/command_flags.h"
#include "src/config/options.h"
#include "src/planner/memory_plan.h"

namespace zt::app {

struct PlanArgs {
  TrainFlags train;  // the training options
  ParsedFlags plan;  // the planner's own flags (plan_flag_specs() and the command's)
};

// The planner flags both commands take.
std::vector<FlagSpec> plan_flag_specs();
// nullopt after printing usage for --help.
std::optional<PlanArgs> parse_plan_args(std::string_view command,
                                        const std::vector<FlagSpec>& specs, Args args);
// The plan's input: the training options on dp = --data-parallel-size or --world-size / tp,
// checked as train checks them. --device cpu plans MPI's fp32 staging of half reductions; cuda
// and auto plan NCCL's.
PlanInput plan_input_from_args(const PlanArgs& a, std::string_view command);
// "4" or, with context parallelism, "4 x cp 2": the data-parallel part of a layout's text.
std::string data_text(const PlanInput& in);

}  // namespace zt::app
