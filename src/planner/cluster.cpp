#include "src/planner/cluster.h"

#include <nlohmann/json.hpp>

#include "src/core/error.h"

namespace zt {
namespace {

constexpr double kGiB = 1073741824.0;

// Vendor figures (a "32 GB" HBM part holds 32 GiB = 32 x 2^30 bytes, so capacities are in GiB):
// V100 SXM3 32 GiB (125 TFLOP/s fp16 tensor, 15.7 fp32, no TF32, 900 GB/s HBM2, NVSwitch 150 GB/s
// per direction per GPU in a DGX-2, 8 x 100 Gb/s InfiniBand = 800 Gb/s per node as in the ZeRO
// paper); A100 SXM 80 GiB (312 TFLOP/s bf16 dense, 19.5 fp32, 156 TF32 dense, 2039 GB/s, NVLink3
// 300 GB/s, 8 x 200 Gb/s); H100 SXM 80 GiB (989 TFLOP/s bf16 dense, 67 fp32, 494.7 TF32 dense,
// 3350 GB/s, NVLink4 450 GB/s, 8 x 400 Gb/s). TF32 on where the part has it, as Megatron does. The
// GEMM efficiency ceilings are typical cuBLAS figures for large fp16/bf16 GEMMs on each part (about
// 75% on V100, 80% on A100, 70% on H100 at these sizes); calibrate them on the real machine.
ClusterSpec dgx2_v100() {
  ClusterSpec c;
  c.name = "dgx2-v100";
  c.gpus_per_node = 16;
  c.nodes = 25;
  c.peak_tflops = 125;
  c.fp32_peak_tflops = 15.7;
  c.gemm_efficiency = 0.75;
  c.gemm_half_dim = 64;
  c.hbm_bytes = 32.0 * kGiB;
  c.hbm_gbps = 900;
  c.intra_node_gbps = 150;
  c.intra_node_latency_us = 5;
  c.inter_node_gbps = 100;
  c.inter_node_latency_us = 10;
  c.pcie_gbps = 12;
  c.kernel_overhead_us = 5;
  return c;
}

ClusterSpec dgx_a100() {
  ClusterSpec c = dgx2_v100();
  c.name = "dgx-a100";
  c.gpus_per_node = 8;
  c.nodes = 50;
  c.peak_tflops = 312;
  c.fp32_peak_tflops = 19.5;
  c.tf32_peak_tflops = 156;
  c.tf32 = true;
  c.gemm_efficiency = 0.8;
  c.gemm_half_dim = 96;
  c.hbm_bytes = 80.0 * kGiB;
  c.hbm_gbps = 2039;
  c.intra_node_gbps = 300;
  c.inter_node_gbps = 200;
  c.pcie_gbps = 25;
  c.kernel_overhead_us = 4;
  return c;
}

ClusterSpec dgx_h100() {
  ClusterSpec c = dgx_a100();
  c.name = "dgx-h100";
  c.peak_tflops = 989;
  c.fp32_peak_tflops = 67;
  c.tf32_peak_tflops = 494.7;
  c.gemm_efficiency = 0.7;
  c.gemm_half_dim = 128;
  c.hbm_gbps = 3350;
  c.intra_node_gbps = 450;
  c.inter_node_gbps = 400;
  c.pcie_gbps = 50;
  c.kernel_overhead_us = 3;
  return c;
}

template <typename T>
void take(const nlohmann::json& j, const char* key, T& field) {
  if (!j.contains(key)) return;
  try {
    field = j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(fmt::format("cluster description: '{}' has the wrong type", key));
  }
}

}  // namespace

double gemm_peak_tflops(const ClusterSpec& c, DType operands) {
  if (operands != DType::F32) return c.peak_tflops;
  if (c.tf32 && c.tf32_peak_tflops > 0) return c.tf32_peak_tflops;
  return c.fp32_peak_tflops > 0 ? c.fp32_peak_tflops : c.peak_tflops;
}

std::vector<std::string_view> cluster_preset_names() {
  return {"dgx2-v100", "dgx-a100", "dgx-h100"};
}

ClusterSpec cluster_preset(std::string_view name) {
  if (name == "dgx2-v100") return dgx2_v100();
  if (name == "dgx-a100") return dgx_a100();
  if (name == "dgx-h100") return dgx_h100();
  throw InputError(fmt::format(
      "unknown cluster preset '{}': use dgx2-v100, dgx-a100, dgx-h100 or a JSON file", name));
}

ClusterSpec cluster_from_json(const nlohmann::json& j, ClusterSpec c) {
  ZT_REQUIRE(j.is_object(), "cluster description: expected a JSON object");
  take(j, "name", c.name);
  take(j, "gpus_per_node", c.gpus_per_node);
  take(j, "nodes", c.nodes);
  take(j, "peak_tflops", c.peak_tflops);
  take(j, "fp32_peak_tflops", c.fp32_peak_tflops);
  take(j, "tf32_peak_tflops", c.tf32_peak_tflops);
  take(j, "tf32", c.tf32);
  take(j, "gemm_efficiency", c.gemm_efficiency);
  take(j, "gemm_half_dim", c.gemm_half_dim);
  take(j, "hbm_bytes", c.hbm_bytes);
  take(j, "hbm_gbps", c.hbm_gbps);
  take(j, "intra_node_gbps", c.intra_node_gbps);
  take(j, "intra_node_latency_us", c.intra_node_latency_us);
  take(j, "inter_node_gbps", c.inter_node_gbps);
  take(j, "inter_node_latency_us", c.inter_node_latency_us);
  take(j, "pcie_gbps", c.pcie_gbps);
  take(j, "kernel_overhead_us", c.kernel_overhead_us);
  take(j, "shared_compute", c.shared_compute);
  ZT_REQUIRE(c.gpus_per_node >= 1 && c.nodes >= 1,
             "cluster description: gpus_per_node and "
             "nodes must be at least 1");
  ZT_REQUIRE(c.fp32_peak_tflops >= 0 && c.tf32_peak_tflops >= 0,
             "cluster description '{}': fp32_peak_tflops and tf32_peak_tflops must not be "
             "negative",
             c.name);
  ZT_REQUIRE(c.peak_tflops > 0 && c.gemm_efficiency > 0 && c.gemm_efficiency <= 1 &&
                 c.hbm_gbps > 0 && c.intra_node_gbps > 0,
             "cluster description '{}': peak_tflops, hbm_gbps and intra_node_gbps must be "
             "positive and gemm_efficiency in (0, 1]",
             c.name);
  return c;
}

nlohmann::json cluster_to_json(const ClusterSpec& c) {
  return {{"name", c.name},
          {"gpus_per_node", c.gpus_per_node},
          {"nodes", c.nodes},
          {"peak_tflops", c.peak_tflops},
          {"fp32_peak_tflops", c.fp32_peak_tflops},
          {"tf32_peak_tflops", c.tf32_peak_tflops},
          {"tf32", c.tf32},
          {"gemm_efficiency", c.gemm_efficiency},
          {"gemm_half_dim", c.gemm_half_dim},
          {"hbm_bytes", c.hbm_bytes},
          {"hbm_gbps", c.hbm_gbps},
          {"intra_node_gbps", c.intra_node_gbps},
          {"intra_node_latency_us", c.intra_node_latency_us},
          {"inter_node_gbps", c.inter_node_gbps},
          {"inter_node_latency_us", c.inter_node_latency_us},
          {"pcie_gbps", c.pcie_gbps},
          {"kernel_overhead_us", c.kernel_overhead_us},
          {"shared_compute", c.shared_compute}};
}

}  // namespace zt
