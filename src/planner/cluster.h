#pragma once
// A cluster description for the step-time simulator: what one device computes and holds, and
// how fast its groups communicate. Loaded from JSON (`zerotron simulate --cluster F`) or taken
// from a preset; every field can be overridden by a calibration file measured on real hardware.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace zt {

struct ClusterSpec {
  std::string name;
  int gpus_per_node = 8;
  int nodes = 1;
  // Dense half-precision tensor-core peak of one device (fp32 for a CPU "device"), TFLOP/s.
  double peak_tflops = 0;
  // The fraction of peak the best large GEMM reaches, and the GEMM dimension at which a
  // dimension's efficiency factor is one half: efficiency(m,n,k) = gemm_efficiency ·
  // m/(m+s) · n/(n+s) · k/(k+s) with s = gemm_half_dim (small GEMMs underfill the machine).
  double gemm_efficiency = 0.7;
  double gemm_half_dim = 64;
  double hbm_bytes = 0;        // device memory
  double hbm_gbps = 0;         // device memory bandwidth, GB/s (memory-bound kernels)
  double intra_node_gbps = 0;  // per-device bus bandwidth inside a node, GB/s
  double intra_node_latency_us = 0;
  double inter_node_gbps = 0;  // per node (all its NICs), GB/s
  double inter_node_latency_us = 0;
  double pcie_gbps = 0;           // device <-> host, per device (Pa+cpu offload)
  double kernel_overhead_us = 0;  // launch + tail per GEMM
  // True when the devices of a node share one compute peak (CPU ranks on the same cores): each
  // device then gets peak_tflops / devices_in_use_per_node.
  bool shared_compute = false;
};

std::vector<std::string_view> cluster_preset_names();
// A preset by name (dgx2-v100, dgx-a100, dgx-h100); InputError for an unknown one.
ClusterSpec cluster_preset(std::string_view name);
// Fields present in `j` override `base` (so a calibration file may set only what it measured).
ClusterSpec cluster_from_json(const nlohmann::json& j, ClusterSpec base = {});
nlohmann::json cluster_to_json(const ClusterSpec& c);

}  // namespace zt
