#pragma once
// A cluster description for the step-time simulator: what one device computes and holds, and
// how fast its groups communicate. Loaded from JSON (`zerotron simulate --cluster F`) or taken
// from a preset; every field can be overridden by a calibration file measured on real hardware.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "src/core/dtype.h"

namespace zt {

struct ClusterSpec {
  std::string name;
  int gpus_per_node = 8;
  int nodes = 1;
  // Dense GEMM peaks of one device in TFLOP/s, by operand type, since a GEMM runs at the peak of
  // its operands: half (fp16/bf16; tensor cores on a GPU; on a CPU whatever its half GEMM
  // reaches, today the widen-and-sgemm path, so the sgemm rate); fp32 (CUDA cores; 0 means the
  // same as half, as on a CPU); TF32 (fp32 operands on sm_80+ tensor cores; 0 where the device
  // has none). `tf32` says whether fp32 GEMMs use it (Megatron's default where it exists).
  double peak_tflops = 0;
  double fp32_peak_tflops = 0;
  double tf32_peak_tflops = 0;
  bool tf32 = false;
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

// The dense peak (TFLOP/s, before shared_compute's split) of a GEMM whose operands are `operands`.
double gemm_peak_tflops(const ClusterSpec& c, DType operands);

std::vector<std::string_view> cluster_preset_names();
// A preset by name (dgx2-v100, dgx-a100, dgx-h100); InputError for an unknown one.
ClusterSpec cluster_preset(std::string_view name);
// Fields present in `j` override `base` (so a calibration file may set only what it measured).
ClusterSpec cluster_from_json(const nlohmann::json& j, ClusterSpec base = {});
nlohmann::json cluster_to_json(const ClusterSpec& c);

}  // namespace zt
