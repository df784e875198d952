#pragma once
// The plan of a training run, from its options: what `train` checks before it allocates
// anything (and what `estimate` and `simulate` compute from the same options table).
#include <string>

#include "src/config/options.h"
#include "src/planner/memory_plan.h"

namespace zt {

// The planner's input for `o` (o.vocab_size set) on `dp` data-parallel ranks.
PlanInput plan_input_from(const TrainOptions& o, int dp);

// Where the memory a rank may use comes from, and how much it is.
struct MemoryBudget {
  double bytes = 0;    // <= 0: no bound known (CUDA without --device-memory)
  std::string source;  // for the error line: "--device-memory 8GiB", "this machine's ..."
  bool host = true;    // the CPU backend: host-memory checkpoints share the budget
};
// --device-memory when given, else on the CPU the machine's physical memory divided among the
// `local_ranks` ranks of this node, or less where less is available to the process
// (available_host_memory: ulimits, the cgroup, MemAvailable). Throws InputError when
// --device-memory on the CPU exceeds that (it is one host allocation there).
MemoryBudget memory_budget(const TrainOptions& o, bool cpu, int local_ranks);

// Throws InputError with one line naming the largest category when the plan of `o` does not
// fit `budget`. Bounds that need no layout (model states, logits, one layer's activations)
// are checked first, in floating point, so an absurd shape (--num-layers 10000000) is refused at
// once, without building its layout or overflowing a byte count.
void check_plan_fits(const TrainOptions& o, int dp, const MemoryBudget& budget);
// The rank's parameters (its tensor-parallel shard) of the last pipeline stage, exactly as its
// layout counts them, without building a layout of every layer (check_plan_fits' lower bound).
double last_stage_params(const PlanInput& in);

// The tiers below the device (--offload-optimizer, --offload-param): refuses `cpu` on the CPU
// backend (its device memory is the host's: nvme is the tier below RAM), an --nvme-path that is
// not a writable directory or lacks the plan's swap-file bytes for the `local_ranks` ranks of
// this node, and on CUDA host states beyond the host memory available to them. One line each
// (InputError).
void check_offload_fits(const TrainOptions& o, int dp, bool cpu, int local_ranks);

}  // namespace zt
