// zerotron estimate: per-rank memory by category and communication per step for a model and a
// layout, from the same layout, partition and byte-count code a training run allocates with
// (src/planner). Sizes in bytes; the human-readable form in GB = 10^9 bytes, as the ZeRO paper
// counts. With --max-parameters: the largest model (shape rule) that fits --device-memory.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/plan_flags.h"
#include "src/comm/nccl_groups.h"
#include "src/core/error.h"
#include "src/planner/max_model.h"

namespace zt::app {
namespace {

constexpr std::string_view kCommand = "estimate";

nlohmann::json stage_json(const MemoryPlan& p, double device) {
  return {{"stage", p.stage},
          {"rank_parameters", p.rank_parameters},
          {"params_bytes", p.params},
          {"grads_bytes", p.grads},
          {"optimizer_bytes", p.optimizer},
          {"model_states_bytes", p.model_states()},
          {"activation_bytes", p.activations},
          {"checkpoint_bytes", p.checkpoints},
          {"host_checkpoint_bytes", p.host_checkpoints},
          {"host_snapshot_bytes", p.host_snapshot},
          {"host_optimizer_bytes", p.host_optimizer},
          {"host_params_bytes", p.host_params},
          {"host_grads_bytes", p.host_grads},
          {"nvme_buffers_bytes", p.nvme_buffers},
          {"nvme_bytes", p.nvme_bytes},
          {"buffers_bytes", p.buffers},
          {"total_bytes", p.device_total()},
          {"nccl_communicators", p.nccl_communicators},
          {"nccl_bytes", p.nccl_bytes},
          {"fits", device <= 0 || plan_fits(p, device, FitCriterion::Device)},
          {"comm_bytes_per_step",
           {{"dp", p.comm_dp},
            {"tp", p.comm_tp},
            {"pp", p.comm_pp},
            {"cp", p.comm_cp},
            {"ep", p.comm_ep}}}};
}

// The largest stage's plan at the top level (the only stage without a pipeline), every stage's
// under "stages" with a pipeline.
nlohmann::json plan_json(const PlanInput& in, const std::vector<MemoryPlan>& stages,
                         double device) {
  const size_t worst = largest_stage(stages);
  nlohmann::json j = stage_json(stages[worst], device);
  j["num_parameters"] = stages[worst].num_parameters;
  // What a token meets (a mixture of experts' router and k experts), and the training FLOPs per
  // token that counts.
  j["active_parameters"] = in.model.num_parameters(true);
  j["flops_per_token"] = in.model.flops_per_token();
  j["model"] = {{"num_layers", in.model.num_layers},
                {"hidden_size", in.model.hidden},
                {"num_attention_heads", in.model.heads},
                {"num_experts", in.model.num_experts},
                {"moe_router_topk", in.model.moe() ? in.model.moe_topk : 0}};
  j["layout"] = {{"tp", in.tp}, {"dp", in.dp / in.cp},       {"cp", in.cp},
                 {"pp", in.pp}, {"model_chunks", in.chunks}, {"zero_stage", in.zero_stage}};
  if (in.pp > 1) {
    j["largest_stage"] = worst;
    j["stages"] = nlohmann::json::array();
    for (const MemoryPlan& p : stages) j["stages"].push_back(stage_json(p, device));
  }
  return j;
}

// NCCL's own device memory, planned per communicator (comm/nccl_groups.h), on its own line:
// outside the pool's total and --device-memory.
void print_nccl_line(const MemoryPlan& p) {
  if (p.nccl_communicators > 0)
    fmt::print(
        "NCCL (outside the total and --device-memory): {} communicators x {:.0f} MiB planned = "
        "{:.2f} GB ({} channels x 2 ring connections x NCCL_BUFFSIZE 4 MiB each; train measures "
        "it at start-up)\n",
        p.nccl_communicators,
        static_cast<double>(comm::kNcclPlannedBytesPerCommunicator) / (1 << 20),
        static_cast<double>(p.nccl_bytes) / 1e9, comm::kNcclPlannedChannels);
}

}  // namespace

int estimate(Args args) {
  std::vector<FlagSpec> specs = plan_flag_specs();
  specs.push_back({"--max-parameters", "WHAT",
                   "print the largest model that fits --device-memory instead: 'model-states' "
                   "(the paper's Table 2) or 'device' (everything)"});
  specs.push_back({"--json", "", "one JSON object instead of the table"});
  auto a = parse_plan_args(kCommand, specs, args);
  if (!a) return 0;
  const ParsedFlags* f = &a->plan;
  const double device = a->train.options.device_memory;
  if (f->has("--max-parameters")) {
    const std::string what = f->str("--max-parameters");
    ZT_REQUIRE(what == "model-states" || what == "device",
               "estimate: --max-parameters takes 'model-states' or 'device', got '{}'", what);
    ZT_REQUIRE(device > 0, "estimate: --max-parameters needs --device-memory");
    ZT_REQUIRE(
        !f->has("--num-parameters") && !a->train.has("num-layers") && !a->train.has("hidden-size"),
        "estimate: --max-parameters chooses the model; give no model shape");
    ZT_REQUIRE(a->train.options.pipeline_model_parallel_size == 1,
               "estimate: --max-parameters plans --pipeline-model-parallel-size 1 only (the "
               "shape rule's layer counts need not divide over the stages)");
    std::vector<std::string_view> with_model(args.begin(), args.end());
    with_model.insert(with_model.end(), {"--num-parameters", "1e9"});
    const PlanInput in =
        plan_input_from_args(*parse_plan_args(kCommand, specs, with_model), kCommand);
    const int64_t n = max_parameters(
        in, device, what == "device" ? FitCriterion::Device : FitCriterion::ModelStates);
    if (f->has("--json"))
      fmt::print("{}\n",
                 nlohmann::json{
                     {"max_parameters", n}, {"criterion", what}, {"device_memory_bytes", device}}
                     .dump());
    else
      fmt::print(
          "largest model whose {} fit {:.1f} GB per rank (tp {}, dp {}, stage {}): {} "
          "parameters ({:.2f}B)\n",
          what == "device" ? "device memory needs" : "model states", device / 1e9, in.tp, in.dp,
          in.zero_stage, n, static_cast<double>(n) / 1e9);
    return 0;
  }
  const PlanInput in = plan_input_from_args(*a, kCommand);
  const std::vector<MemoryPlan> stages = plan_stages(in);
  if (f->has("--json")) {
    fmt::print("{}\n", plan_json(in, stages, device).dump());
    return 0;
  }
  auto gb = [](double b) { return b / 1e9; };
  const MemoryPlan& p = stages[largest_stage(stages)];
  if (in.model.moe())
    fmt::print("mixture of experts: {} experts, top {}: {} of the parameters active per token\n",
               in.model.num_experts, in.model.moe_topk, in.model.num_parameters(true));
  if (in.pp == 1) {
    fmt::print("model: {} parameters ({} on each {}), tp {} x dp {}, ZeRO stage {}\n",
               p.num_parameters, p.rank_parameters,
               in.model.expert_parallel > 1 ? "rank, its tensor-parallel shard of its experts"
                                            : "tensor-parallel rank",
               in.tp, data_text(in), in.zero_stage);
    fmt::print("per rank (GB = 1e9 bytes):\n");
    fmt::print(
        "  params          {:10.3f}\n  grads           {:10.3f}\n  optimizer       {:10.3f}\n",
        gb(p.params), gb(p.grads), gb(p.optimizer));
    fmt::print(
        "  model states    {:10.3f}\n  activations     {:10.3f}\n  checkpoints     {:10.3f}\n",
        gb(p.model_states()), gb(p.activations), gb(p.checkpoints));
    fmt::print(
        "  buffers         {:10.3f}\n  total (device)  {:10.3f}\n  host ckpts      {:10.3f}\n",
        gb(p.buffers), gb(p.device_total()), gb(p.host_checkpoints));
    if (p.host_snapshot > 0)  // --async-save
      fmt::print("  host snapshot   {:10.3f}\n", gb(p.host_snapshot));
    if (p.host_optimizer > 0)  // --offload-optimizer cpu
      fmt::print("  host optimizer  {:10.3f}\n", gb(p.host_optimizer));
    if (p.host_params > 0)  // --offload-param cpu
      fmt::print("  host params     {:10.3f}\n", gb(p.host_params));
    if (p.host_grads > 0)  // stages 2-3, the optimizer offloaded from CUDA
      fmt::print("  host grads      {:10.3f}\n", gb(p.host_grads));
    if (p.nvme_bytes > 0)  // --offload-optimizer or --offload-param nvme
      fmt::print("  nvme buffers    {:10.3f}\n  nvme (file)     {:10.3f}\n", gb(p.nvme_buffers),
                 gb(static_cast<double>(p.nvme_bytes)));
    if (device > 0)
      fmt::print("  fits in {:.1f} GB: {}\n", gb(device),
                 plan_fits(p, device, FitCriterion::Device) ? "yes" : "no");
    fmt::print("communication per step: dp {:.3f} GB, tp {:.3f} GB", gb(p.comm_dp), gb(p.comm_tp));
    if (in.cp > 1) fmt::print(", cp {:.3f} GB", gb(p.comm_cp));
    if (in.model.expert_parallel > 1) fmt::print(", ep {:.3f} GB", gb(p.comm_ep));
    fmt::print("\n");
    print_nccl_line(p);
    return 0;
  }
  // A pipeline: one column per stage (each stage's tp x dp ranks hold the same plan).
  fmt::print(
      "model: {} parameters, tp {} x dp {} x pp {} ({} model chunk(s) per stage, {} micro-batches "
      "per step), ZeRO stage {}\n",
      p.num_parameters, in.tp, data_text(in), in.pp, in.chunks, in.accumulation, in.zero_stage);
  fmt::print("per rank of each pipeline stage (GB = 1e9 bytes):\n");
  auto row = [&](std::string_view name, auto value) {
    std::string line = fmt::format("  {:<17}", name);
    for (const MemoryPlan& q : stages) line += fmt::format(" {:10.3f}", gb(value(q)));
    fmt::print("{}\n", line);
  };
  {
    std::string line = fmt::format("  {:<17}", "stage");
    for (const MemoryPlan& q : stages) line += fmt::format(" {:>10}", q.stage);
    fmt::print("{}\n", line);
  }
  using P = const MemoryPlan&;
  row("params", [](P q) { return static_cast<double>(q.params); });
  row("grads", [](P q) { return static_cast<double>(q.grads); });
  row("optimizer", [](P q) { return static_cast<double>(q.optimizer); });
  row("model states", [](P q) { return static_cast<double>(q.model_states()); });
  row("activations", [](P q) { return static_cast<double>(q.activations); });
  row("checkpoints", [](P q) { return static_cast<double>(q.checkpoints); });
  row("buffers", [](P q) { return static_cast<double>(q.buffers); });
  row("total (device)", [](P q) { return static_cast<double>(q.device_total()); });
  row("host ckpts", [](P q) { return static_cast<double>(q.host_checkpoints); });
  if (in.async_save) row("host snapshot", [](P q) { return static_cast<double>(q.host_snapshot); });
  if (in.optimizer_tier == StateTier::Host)
    row("host optimizer", [](P q) { return static_cast<double>(q.host_optimizer); });
  if (in.optimizer_tier == StateTier::Nvme) {
    row("nvme buffers", [](P q) { return static_cast<double>(q.nvme_buffers); });
    row("nvme (file)", [](P q) { return static_cast<double>(q.nvme_bytes); });
  }
  row("comm dp /step", [](P q) { return static_cast<double>(q.comm_dp); });
  row("comm tp /step", [](P q) { return static_cast<double>(q.comm_tp); });
  row("comm pp /step", [](P q) { return static_cast<double>(q.comm_pp); });
  if (in.cp > 1) row("comm cp /step", [](P q) { return static_cast<double>(q.comm_cp); });
  if (in.model.expert_parallel > 1)
    row("comm ep /step", [](P q) { return static_cast<double>(q.comm_ep); });
  fmt::print("largest: stage {}, {:.3f} GB", p.stage, gb(p.device_total()));
  if (device > 0)
    fmt::print("; fits in {:.1f} GB: {}", gb(device),
               plan_fits(p, device, FitCriterion::Device) ? "yes" : "no");
  fmt::print("\n");
  print_nccl_line(p);
  return 0;
}

}  // namespace zt::app
