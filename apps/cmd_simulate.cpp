// zerotron simulate: step time, per-device TFLOP/s, tokens/s and memory of a model and layout on
// a cluster (a preset or a JSON description, optionally calibrated from measured runs), from the
// planner's memory plan and communication volumes (src/planner/step_model.h). --bf16/--fp16 set
// the working precision of everything the trainer keeps in it (GEMM operands, activations,
// checkpoints, tensor-parallel traffic), as in a training run.
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/plan_flags.h"
#include "src/core/error.h"
#include "src/planner/step_model.h"

namespace zt::app {
namespace {

constexpr std::string_view kCommand = "simulate";

nlohmann::json read_json_file(const std::string& path, std::string_view flag) {
  std::ifstream f(path);
  ZT_REQUIRE(f.good(), "simulate: cannot read {} '{}'", flag, path);
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("simulate: {} '{}' is not valid JSON: {}", flag, path, e.what()));
  }
}

ClusterSpec load_cluster(const ParsedFlags& f) {
  const std::string name = f.str("--cluster", "dgx2-v100");
  ClusterSpec c;
  if (name.ends_with(".json")) {
    // A description at the top level, or under "cluster" as bench_calibrate writes it.
    const nlohmann::json j = read_json_file(name, "--cluster");
    c = cluster_from_json(j.contains("cluster") ? j.at("cluster") : j);
  } else {
    c = cluster_preset(name);
  }
  if (f.has("--calibrate")) {
    // A calibration file holds measured cluster fields, at the top level or under "cluster".
    const nlohmann::json j = read_json_file(f.str("--calibrate"), "--calibrate");
    c = cluster_from_json(j.contains("cluster") ? j.at("cluster") : j, c);
  }
  return c;
}

// Which of the device's peaks the GEMMs run at, for the console line.
std::string_view peak_name(const ClusterSpec& c, DType working) {
  if (working != DType::F32) return "half-precision";
  return c.tf32 && c.tf32_peak_tflops > 0 ? "TF32" : "fp32";
}

}  // namespace

int simulate(Args args) {
  std::vector<FlagSpec> specs = plan_flag_specs();
  specs.push_back({"--cluster", "NAME|FILE",
                   "dgx2-v100 (default, the paper's), dgx-a100, dgx-h100, or a JSON file"});
  specs.push_back(
      {"--calibrate", "FILE", "measured cluster fields (JSON) overriding the cluster's"});
  specs.push_back({"--max-micro-batch", "", "use the largest micro batch that fits the memory"});
  specs.push_back({"--no-overlap-comm", "", "data-parallel communication not overlapped"});
  specs.push_back({"--print-cluster", "", "print the cluster description as JSON and exit"});
  specs.push_back({"--json", "", "one JSON object instead of the table"});
  auto a = parse_plan_args(kCommand, specs, args);
  if (!a) return 0;
  const ParsedFlags* f = &a->plan;
  const ClusterSpec cluster = load_cluster(*f);
  if (f->has("--print-cluster")) {
    fmt::print("{}\n", cluster_to_json(cluster).dump(2));
    return 0;
  }
  PlanInput in = plan_input_from_args(*a, kCommand);
  SimOptions opt;
  opt.overlap_comm = !f->has("--no-overlap-comm");
  opt.overlap_offloaded_step = !a->train.options.no_overlap_optimizer_step;
  opt.prefetch_bucket_elems = a->train.options.prefetch_bucket_size;
  opt.max_live_elems = a->train.options.max_live_parameters;
  ClusterSpec sized = cluster;
  if (a->train.has("device-memory")) sized.hbm_bytes = a->train.options.device_memory;
  if (f->has("--max-micro-batch")) {
    in.micro_batch = max_micro_batch(in, sized, opt);
    ZT_REQUIRE(in.micro_batch > 0, "simulate: not even a micro batch of 1 fits {:.1f} GB",
               sized.hbm_bytes / 1e9);
  }
  if (a->train.options.global_batch_size != 0) {  // again: --max-micro-batch may have changed it
    const int64_t g = a->train.options.global_batch_size;
    const int64_t per = static_cast<int64_t>(in.micro_batch) * (in.dp / in.cp);
    ZT_REQUIRE(g % per == 0,
               "simulate: --global-batch-size {} is not a multiple of micro batch x dp = {}", g,
               per);
    in.accumulation = static_cast<int>(g / per);
  }
  const StepEstimate r = simulate_step(in, sized, opt);
  const int world = in.tp * in.dp * in.pp;
  if (f->has("--json")) {
    nlohmann::json j = {{"cluster", cluster.name},
                        {"num_parameters", r.memory.num_parameters},
                        {"layout",
                         {{"tp", in.tp},
                          {"dp", in.dp / in.cp},
                          {"cp", in.cp},
                          {"pp", in.pp},
                          {"model_chunks", in.chunks},
                          {"zero_stage", in.zero_stage},
                          {"world", world}}},
                        {"micro_batch", in.micro_batch},
                        {"gradient_accumulation", in.accumulation},
                        {"global_batch", r.global_batch},
                        {"step_ms", r.step_ms},
                        {"forward_ms", r.forward_ms},
                        {"backward_ms", r.backward_ms},
                        {"recompute_ms", r.recompute_ms},
                        {"optimizer_ms", r.optimizer_ms},
                        {"tp_comm_ms", r.tp_comm_ms},
                        {"dp_comm_ms", r.dp_comm_ms},
                        {"dp_exposed_ms", r.dp_exposed_ms},
                        {"dp_hidden_fraction", r.dp_hidden_fraction},
                        {"compute_busy_ms", r.compute_busy_ms},
                        {"offload_ms", r.offload_ms},
                        {"offload_tiers",
                         {{"host_adamw_ms", r.tiers.host_ms},
                          {"nvme_ms", r.tiers.nvme_ms},
                          {"pcie_ms", r.tiers.pcie_ms},
                          {"grad_ms", r.tiers.grad_ms},
                          {"param_write_ms", r.tiers.param_write_ms},
                          {"param_read_ms", r.tiers.param_read_ms}}},
                        {"pipeline_ms", r.pipeline_ms},
                        {"bubble_fraction", r.bubble_fraction},
                        {"p2p_ms", r.p2p_ms},
                        {"tied_ms", r.tied_ms},
                        {"largest_stage", r.largest_stage},
                        {"gemm_efficiency", r.gemm_efficiency},
                        {"gemm_peak_tflops", r.gemm_peak_tflops},
                        {"tflops_per_device", r.hardware_tflops_per_device},
                        {"model_tflops_per_device", r.model_tflops_per_device},
                        {"total_pflops", r.hardware_tflops_per_device * world / 1e3},
                        {"tokens_per_s", r.tokens_per_s},
                        {"device_bytes", r.device_bytes},
                        {"fits", r.fits}};
    fmt::print("{}\n", j.dump());
    return 0;
  }
  if (in.pp == 1) {
    fmt::print(
        "{}: {} parameters, tp {} x dp {} = {} devices, ZeRO stage {}, micro batch {} x {} "
        "accumulation = global batch {}\n",
        cluster.name, r.memory.num_parameters, in.tp, data_text(in), world, in.zero_stage,
        in.micro_batch, in.accumulation, r.global_batch);
    fmt::print(
        "step {:.1f} ms: forward {:.1f}, recompute {:.1f}, backward {:.1f}, optimizer {:.1f}, "
        "tp comm {:.1f}, dp comm {:.1f} ({:.1f} exposed), offload {:.1f}\n",
        r.step_ms, r.forward_ms, r.recompute_ms, r.backward_ms, r.optimizer_ms, r.tp_comm_ms,
        r.dp_comm_ms, r.dp_exposed_ms, r.offload_ms);
  } else {
    fmt::print(
        "{}: {} parameters, tp {} x dp {} x pp {} = {} devices, {} schedule ({} model chunk(s) "
        "per stage), ZeRO stage {}, micro batch {} x {} micro-batches = global batch {}\n",
        cluster.name, r.memory.num_parameters, in.tp, data_text(in), in.pp, world,
        in.chunks > 1 ? "interleaved" : "1F1B", in.chunks, in.zero_stage, in.micro_batch,
        in.accumulation, r.global_batch);
    fmt::print(
        "step {:.1f} ms: pipeline {:.1f} (bubble {:.1f}%; slowest stage: forward {:.1f}, "
        "recompute {:.1f}, backward {:.1f}, tp comm {:.1f}; hand-over {:.3f} each), tied "
        "embedding {:.1f}, optimizer {:.1f}, dp comm {:.1f} (exposed), offload {:.1f}\n",
        r.step_ms, r.pipeline_ms, 100 * r.bubble_fraction, r.forward_ms, r.recompute_ms,
        r.backward_ms, r.tp_comm_ms, r.p2p_ms, r.tied_ms, r.optimizer_ms, r.dp_exposed_ms,
        r.offload_ms);
  }
  if (in.optimizer_tier != StateTier::Device || in.param_tier != StateTier::Device)
    fmt::print(
        "offload: host AdamW {:.1f}, NVMe {:.1f}, PCIe {:.1f}, gradients {:.1f}, parameters "
        "written {:.1f} and read {:.1f} ms per step (optimizer above: what the step waits for)\n",
        r.tiers.host_ms, r.tiers.nvme_ms, r.tiers.pcie_ms, r.tiers.grad_ms, r.tiers.param_write_ms,
        r.tiers.param_read_ms);
  fmt::print(
      "per device: {:.1f} TFLOP/s ({:.1f} model TFLOP/s, GEMMs at {:.0f}% of the {:.1f} TFLOP/s "
      "{} peak); {:.0f} tokens/s for the job; {:.2f} PFLOP/s in total\n",
      r.hardware_tflops_per_device, r.model_tflops_per_device, 100 * r.gemm_efficiency,
      r.gemm_peak_tflops, peak_name(sized, in.working), r.tokens_per_s,
      r.hardware_tflops_per_device * world / 1e3);
  fmt::print("memory per device{}: {:.2f} GB of {:.1f} GB ({})\n",
             in.pp > 1 ? fmt::format(" (largest: stage {})", r.largest_stage) : std::string(),
             r.device_bytes / 1e9, sized.hbm_bytes / 1e9, r.fits ? "fits" : "does NOT fit");
  return 0;
}

}  // namespace zt::app
