#pragma once
// What the offload tiers (docs/design/offload.md) cost a step, from the plan's bytes and the
// cluster's bandwidths: `simulate` puts it where the device optimizer was.
#include "src/planner/cluster.h"
#include "src/planner/memory_plan.h"

namespace zt {

struct OffloadTime {
  double host_ms = 0;  // the host AdamW over the optimizer's shard
  double nvme_ms = 0;  // the optimizer's swap file, read and written once
  // Copies between the device and host memory that the step waits for (CUDA): the gradients
  // out, the master parameters back, stage 3's parameter parts in for each gather.
  double pcie_ms = 0;
  double param_write_ms = 0;  // stage 3's parameter swap file, written back at the step
  double param_read_ms = 0;   // and read by the gathers of every forward and backward
  // The gradient shard's swap file (grad_tier Nvme): written by each micro-batch's backward
  // (read and added to after the first) and read twice at the step (the norm, the update).
  double grad_ms = 0;
  // The offloaded optimizer's update: its streamed pipeline (read ahead, update, write behind)
  // runs at its slowest stage, and the copies are synchronous.
  double update_ms() const { return std::max(host_ms, nvme_ms) + pcie_ms + grad_ms; }
};

// `adamw_ns`: the CPU backend's AdamW per element where calibrated (its device is the host), or
// negative. `ranks_per_node`: the ranks that share the node's host memory and disk. Refuses
// (InputError, one line) where the cluster lacks a bandwidth the tiers need.
OffloadTime offload_time(const PlanInput& in, const MemoryPlan& m, const ClusterSpec& c,
                         double adamw_ns, int ranks_per_node);

}  // namespace zt
