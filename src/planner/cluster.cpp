#include "src/planner/cluster.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "src/core/error.h"

namespace zt {
namespace {

constexpr double kGiB = 1073741824.0;

// Vendor figures (a "32 GB" HBM part holds 32 GiB = 32 x 2^30 bytes, so capacities are in GiB),
// from NVIDIA's datasheets: the Tesla V100 datasheet (SXM3 32 GB: 125 TFLOP/s fp16 tensor, 15.7
// fp32, 900 GB/s HBM2) and the DGX-2 datasheet (NVSwitch: 150 GB/s per direction per GPU; 8 x 100
// Gb/s InfiniBand = 800 Gb/s per node, as the ZeRO paper states for its cluster); the A100
// datasheet (SXM 80 GB: 312 TFLOP/s bf16/fp16 dense, 19.5 fp32, 156 TF32 dense, 2039 GB/s) and
// the DGX A100 datasheet (NVLink3 300 GB/s per direction per GPU; 8 x 200 Gb/s HDR); the H100
// datasheet (SXM5: 989 TFLOP/s bf16 dense, 67 fp32, 494.7 TF32 dense, 3350 GB/s) and the DGX H100
// datasheet (NVLink4 450 GB/s per direction; 8 x 400 Gb/s NDR). TF32 on where the part has it, as
// Megatron does. Latencies and PCIe rates are typical figures, not the vendors'.
//
// Efficiency factors (gemm_efficiency, inter_node_efficiency) are fitted by
// examples/scaling/published_points.py --fit PRESET on ONE named set of published points each,
// and checked on the others (docs/results/simulate.md):
//   dgx2-v100: the ZeRO paper's ZeRO-100B on 400 GPUs (38 TFLOP/s per GPU) and its Megatron-40B
//              baseline, mp 32 over two DGX-2 nodes (about 5): 2019's software stack;
//   dgx-a100:  Narayanan et al. 2021, Table 1's 1.7B row (137) and Table 2's ZeRO-3 174.6B on
//              1536 GPUs (44);
//   dgx-h100:  no published point here; the A100's factors, unvalidated.
// nics_per_collective is what the published runs show, not fitted: the ZeRO-3 rows of
// Narayanan's Table 2 take the same step time at twice the GPUs (174.6B: 768 and 1536; 529.6B:
// 1120 and 2240) and a step time that grows with the parameter bytes, about 6 bytes per
// parameter at 17 GB/s per GPU, which is one HDR NIC per rank, not the 8 NICs of a node that
// NCCL's channels would give one ring in principle. The ZeRO paper's 13B without model
// parallelism at over 40 TFLOP/s per GPU needs more than one EDR NIC per ring (a reduce-scatter
// and an all-gather of 13B fp16 values, 52 GB a step, take over 4 s at 12.5 GB/s of its 5.3 s
// step), so the DGX-2 preset keeps all of them.
ClusterSpec dgx2_v100() {
  ClusterSpec c;
  c.name = "dgx2-v100";
  c.gpus_per_node = 16;
  c.nodes = 25;
  c.peak_tflops = 125;
  c.fp32_peak_tflops = 15.7;
  c.gemm_efficiency = 0.5973;        // fitted (see above)
  c.inter_node_efficiency = 0.1752;  // fitted
  c.gemm_half_dim = 64;
  c.hbm_bytes = 32.0 * kGiB;
  c.hbm_gbps = 900;
  c.intra_node_gbps = 150;
  c.intra_node_latency_us = 5;
  c.inter_node_gbps = 100;
  c.inter_node_latency_us = 10;
  c.nics_per_node = 8;
  c.nics_per_collective = 0;
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
  c.gemm_efficiency = 0.6193;        // fitted (see above)
  c.inter_node_efficiency = 0.6936;  // fitted
  c.gemm_half_dim = 96;
  c.hbm_bytes = 80.0 * kGiB;
  c.hbm_gbps = 2039;
  c.intra_node_gbps = 300;
  c.inter_node_gbps = 200;
  c.nics_per_node = 8;
  c.nics_per_collective = 1;
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
  c.gemm_half_dim = 128;  // efficiencies and latency: the A100's
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

std::string_view dtype_key(DType d) {
  return d == DType::BF16 ? "bf16" : d == DType::F16 ? "fp16" : "fp32";
}

double log_gap(double a, double b) {
  return std::abs(std::log(std::max(a, 1.0)) - std::log(std::max(b, 1.0)));
}

}  // namespace

double table_gemm_ms(const ClusterSpec& c, DType dtype, std::string_view pass, double m, double n,
                     double k) {
  const ClusterSpec::GemmSample* best = nullptr;
  double gap = 0;
  for (const auto& s : c.gemm_table) {
    if (s.dtype != dtype_key(dtype) || s.pass != pass || s.gflops <= 0) continue;
    const double g = log_gap(s.m, m) + log_gap(s.n, n) + log_gap(s.k, k);
    if (!best || g < gap) {
      best = &s;
      gap = g;
    }
  }
  if (!best) return -1;
  return 2 * m * n * k / (best->gflops * 1e9) * 1e3;
}

double table_attention_ms(const ClusterSpec& c, DType dtype, bool backward, double batch,
                          double heads, double seq, double head_dim) {
  const ClusterSpec::AttentionSample* best = nullptr;
  double gap = 0;
  for (const auto& s : c.attention_table) {
    if (s.dtype != dtype_key(dtype)) continue;
    const double g = log_gap(s.seq, seq) + log_gap(s.head_dim, head_dim);
    if (!best || g < gap) {
      best = &s;
      gap = g;
    }
  }
  if (!best) return -1;
  const double scale = batch * heads / (best->batch * best->heads) * (seq / best->seq) *
                       (seq / best->seq) * (head_dim / best->head_dim);
  return (backward ? best->backward_ms : best->forward_ms) * scale;
}

double table_comm_ms(const ClusterSpec& c, std::string_view op, int group, double bytes) {
  // The measured group nearest in size, then its curve.
  int g = -1;
  for (const auto& s : c.comm_table)
    if (s.op == op && (g < 0 || std::abs(s.group - group) < std::abs(g - group))) g = s.group;
  if (g < 0) return -1;
  std::vector<std::pair<double, double>> pts;
  for (const auto& s : c.comm_table)
    if (s.op == op && s.group == g && s.bytes > 0 && s.us > 0) pts.emplace_back(s.bytes, s.us);
  if (pts.empty()) return -1;
  std::sort(pts.begin(), pts.end());
  if (bytes <= pts.front().first) return pts.front().second * 1e-3;
  if (bytes >= pts.back().first) return pts.back().second * bytes / pts.back().first * 1e-3;
  for (size_t i = 1; i < pts.size(); ++i)
    if (bytes <= pts[i].first) {
      const auto [x0, y0] = pts[i - 1];
      const auto [x1, y1] = pts[i];
      const double t = (std::log(bytes) - std::log(x0)) / (std::log(x1) - std::log(x0));
      return std::exp(std::log(y0) + t * (std::log(y1) - std::log(y0))) * 1e-3;
    }
  return pts.back().second * 1e-3;
}

double table_elementwise_ns(const ClusterSpec& c, DType dtype, std::string_view kernel) {
  for (const auto& s : c.elementwise_table)
    if (s.dtype == dtype_key(dtype) && s.kernel == kernel) return s.ns_per_elem;
  for (const auto& s : c.elementwise_table)  // another precision's, where this one is missing
    if (s.kernel == kernel) return s.ns_per_elem;
  return -1;
}

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
  take(j, "nics_per_node", c.nics_per_node);
  take(j, "nics_per_collective", c.nics_per_collective);
  take(j, "intra_node_efficiency", c.intra_node_efficiency);
  take(j, "inter_node_efficiency", c.inter_node_efficiency);
  take(j, "pcie_gbps", c.pcie_gbps);
  take(j, "kernel_overhead_us", c.kernel_overhead_us);
  take(j, "shared_compute", c.shared_compute);
  take(j, "comm_overlaps_compute", c.comm_overlaps_compute);
  take(j, "memcpy_gbps", c.memcpy_gbps);
  take(j, "host_memory_gbps", c.host_memory_gbps);
  take(j, "nvme_read_gbps", c.nvme_read_gbps);
  take(j, "nvme_write_gbps", c.nvme_write_gbps);
  take(j, "shared_core_speedup", c.shared_core_speedup);
  try {
    if (j.contains("gemm_table")) {
      c.gemm_table.clear();
      for (const auto& x : j.at("gemm_table"))
        c.gemm_table.push_back({x.at("dtype").get<std::string>(), x.at("pass").get<std::string>(),
                                x.at("m").get<double>(), x.at("n").get<double>(),
                                x.at("k").get<double>(), x.at("gflops").get<double>()});
    }
    if (j.contains("attention_table")) {
      c.attention_table.clear();
      for (const auto& x : j.at("attention_table"))
        c.attention_table.push_back(
            {x.at("dtype").get<std::string>(), x.at("batch").get<double>(),
             x.at("heads").get<double>(), x.at("seq").get<double>(), x.at("head_dim").get<double>(),
             x.at("forward_ms").get<double>(), x.at("backward_ms").get<double>()});
    }
    if (j.contains("comm_table")) {
      c.comm_table.clear();
      for (const auto& x : j.at("comm_table"))
        c.comm_table.push_back({x.at("op").get<std::string>(), x.at("group").get<int>(),
                                x.at("bytes").get<double>(), x.at("us").get<double>()});
    }
    if (j.contains("elementwise_table")) {
      c.elementwise_table.clear();
      for (const auto& x : j.at("elementwise_table"))
        c.elementwise_table.push_back({x.at("dtype").get<std::string>(),
                                       x.at("kernel").get<std::string>(),
                                       x.at("ns_per_elem").get<double>()});
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(
        fmt::format("cluster description: a measured table is malformed: {}", e.what()));
  }
  ZT_REQUIRE(c.gpus_per_node >= 1 && c.nodes >= 1 && c.nics_per_node >= 1,
             "cluster description: gpus_per_node, nodes and nics_per_node must be at least 1");
  ZT_REQUIRE(c.nics_per_collective >= 0,
             "cluster description: nics_per_collective must not be negative");
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
  nlohmann::json gemm = nlohmann::json::array(), attention = nlohmann::json::array(),
                 comm = nlohmann::json::array(), elementwise = nlohmann::json::array();
  for (const auto& x : c.gemm_table)
    gemm.push_back({{"dtype", x.dtype},
                    {"pass", x.pass},
                    {"m", x.m},
                    {"n", x.n},
                    {"k", x.k},
                    {"gflops", x.gflops}});
  for (const auto& x : c.attention_table)
    attention.push_back({{"dtype", x.dtype},
                         {"batch", x.batch},
                         {"heads", x.heads},
                         {"seq", x.seq},
                         {"head_dim", x.head_dim},
                         {"forward_ms", x.forward_ms},
                         {"backward_ms", x.backward_ms}});
  for (const auto& x : c.comm_table)
    comm.push_back({{"op", x.op}, {"group", x.group}, {"bytes", x.bytes}, {"us", x.us}});
  for (const auto& x : c.elementwise_table)
    elementwise.push_back(
        {{"dtype", x.dtype}, {"kernel", x.kernel}, {"ns_per_elem", x.ns_per_elem}});
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
          {"nics_per_node", c.nics_per_node},
          {"nics_per_collective", c.nics_per_collective},
          {"intra_node_efficiency", c.intra_node_efficiency},
          {"inter_node_efficiency", c.inter_node_efficiency},
          {"pcie_gbps", c.pcie_gbps},
          {"kernel_overhead_us", c.kernel_overhead_us},
          {"shared_compute", c.shared_compute},
          {"comm_overlaps_compute", c.comm_overlaps_compute},
          {"memcpy_gbps", c.memcpy_gbps},
          {"host_memory_gbps", c.host_memory_gbps},
          {"nvme_read_gbps", c.nvme_read_gbps},
          {"nvme_write_gbps", c.nvme_write_gbps},
          {"shared_core_speedup", c.shared_core_speedup},
          {"gemm_table", gemm},
          {"attention_table", attention},
          {"comm_table", comm},
          {"elementwise_table", elementwise}};
}

}  // namespace zt
