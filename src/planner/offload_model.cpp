#include "src/planner/offload_model.h"

#include <algorithm>

#include "src/core/error.h"
#include "src/zero/optimizer_states.h"

namespace zt {
namespace {

double ms(double bytes, double gbps) {
  return bytes / (gbps * 1e9) * 1e3;
}

void require_nvme(const ClusterSpec& c) {
  ZT_REQUIRE(c.nvme_read_gbps > 0 && c.nvme_write_gbps > 0,
             "simulate: the cluster '{}' has no nvme_read_gbps/nvme_write_gbps for the NVMe tier "
             "(bench_disk_bandwidth DIR > disk.json measures them: --calibrate disk.json)",
             c.name);
}

}  // namespace

OffloadTime offload_time(const PlanInput& in, const MemoryPlan& m, const ClusterSpec& c,
                         double adamw_ns, int ranks_per_node) {
  OffloadTime t;
  const double ranks = std::max(1, ranks_per_node);
  const double n = static_cast<double>(m.optimizer_elems);
  const double a = in.accumulation;
  const double grad_bytes = in.fp32_grads ? 4.0 : static_cast<double>(dtype_size(in.working));
  const bool host_grads = grads_offloaded(in.zero_stage, in.optimizer_tier, in.cuda);
  double pcie_bytes = 0;
  if (in.optimizer_tier != StateTier::Device) {
    // AdamW reads master, m, v and the gradient and writes master, m, v.
    const double adam_bytes = n * (24 + (host_grads ? 4 : grad_bytes));
    if (!in.cuda && adamw_ns >= 0) {
      t.host_ms = adamw_ns * n * 1e-6;
    } else {
      const double gbps = in.cuda ? c.host_memory_gbps : c.hbm_gbps;
      ZT_REQUIRE(gbps > 0,
                 "simulate: the cluster '{}' has no host_memory_gbps for the host optimizer step "
                 "(--calibrate FILE with the node's host memory bandwidth)",
                 c.name);
      t.host_ms = ms(adam_bytes, gbps / ranks);
    }
    if (in.optimizer_tier == StateTier::Nvme) {
      require_nvme(c);
      const auto file = static_cast<double>(m.nvme_bytes - m.param_nvme_bytes - m.grad_nvme_bytes);
      t.nvme_ms = std::max(ms(file, c.nvme_read_gbps / ranks), ms(file, c.nvme_write_gbps / ranks));
      const auto grads = static_cast<double>(m.grad_nvme_bytes);
      t.grad_ms =
          ms((a + 1) * grads, c.nvme_read_gbps / ranks) + ms(a * grads, c.nvme_write_gbps / ranks);
    }
    // The gradient leaves the device (each micro-batch's reduced part where it is kept on the
    // host, in fp32; else the whole shard at the step) and the updated parameters come back,
    // rounded to the working precision on the host.
    if (in.cuda)
      pcie_bytes += (host_grads ? a * n * 4 : n * grad_bytes) +
                    n * static_cast<double>(dtype_size(in.working));
  }
  if (in.param_tier != StateTier::Device) {
    const auto file = static_cast<double>(m.param_nvme_bytes);
    if (in.param_tier == StateTier::Nvme) {
      require_nvme(c);
      t.param_write_ms = ms(file, c.nvme_write_gbps / ranks);
      t.param_read_ms = 2 * a * ms(file, c.nvme_read_gbps / ranks);
    }
    // Each gather's own part comes to the device, in the forward and in the backward.
    if (in.cuda)
      pcie_bytes += 2 * a * static_cast<double>(m.host_params > 0 ? m.host_params : file);
  }
  if (pcie_bytes > 0) {
    ZT_REQUIRE(c.pcie_gbps > 0, "simulate: the cluster '{}' has no pcie_gbps for the host tier",
               c.name);
    t.pcie_ms = ms(pcie_bytes, c.pcie_gbps);
  }
  return t;
}

}  // namespace zt
