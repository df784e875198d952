#include "src/planner/train_plan.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <utility>

#include "src/config/derive.h"
#include "src/core/error.h"
#include "src/core/swap_dir.h"
#include "src/model/param_layout.h"
#include "src/model/pipeline_split.h"
#include "src/planner/host_memory.h"

namespace zt {
namespace {

std::string gb(double bytes) {
  if (bytes >= 1e9) return fmt::format("{:.2f} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.2f} MB", bytes / 1e6);
  return fmt::format("{:.0f} bytes", bytes);
}

// What to change when a category is the largest.
std::string_view advice(std::string_view category) {
  if (category == "activations" || category == "checkpoints" || category == "host checkpoints")
    return "use --checkpoint-activations (with --partition-activations under tensor parallelism), "
           "a smaller --micro-batch-size or --seq-length";
  if (category == "buffers")
    return "use smaller --reduce-bucket-size, --allgather-bucket-size or --prefetch-bucket-size";
  if (category == "optimizer states")
    return "use a higher --zero-stage, more ranks, tensor parallelism, a smaller model, or keep "
           "the optimizer off the device: --offload-optimizer nvme --nvme-path DIR (or cpu with "
           "--device cuda)";
  return "use a higher --zero-stage, more ranks, tensor parallelism or a smaller model";
}

[[noreturn]] void refuse(std::string_view what, double total, std::string_view category,
                         double largest, const MemoryBudget& budget, std::string_view where = "") {
  throw InputError(fmt::format(
      "the layout does not fit: it needs {}{} per rank{}, the largest part {} {}, more than {} "
      "({}); {}",
      what, gb(total), where, category, gb(largest), gb(budget.bytes), budget.source,
      advice(category)));
}

}  // namespace

PlanInput plan_input_from(const TrainOptions& o, int dp) {
  const DerivedConfig d = derive_validated(o, dp);
  PlanInput in;
  in.model = d.model;
  in.make_vocab_divisible_by = o.make_vocab_size_divisible_by;
  in.tp = d.tp;
  in.dp = d.dp * d.cp;
  in.cp = d.cp;
  in.pp = d.pp;
  in.chunks = d.chunks;
  in.first_stage_layers = d.first_stage_layers;
  in.last_stage_layers = d.last_stage_layers;
  in.zero_stage = d.zero.stage;
  in.working = d.working;
  in.fp32_grads = d.zero.fp32_grads;
  in.cast_params = d.zero.cast_params;
  in.micro_batch = d.batch.micro;
  in.accumulation = d.batch.accumulation;
  in.checkpoint_activations = d.checkpoint_activations;
  in.checkpoint_num_layers = d.checkpoint.span;
  in.partition_activations = d.checkpoint.partition;
  in.cpu_checkpointing = d.checkpoint.cpu;
  in.reduce_bucket_elems = d.zero.reduce_bucket_elems;
  in.param_persistence_threshold = d.zero.param_persistence_threshold;
  in.prefetch_bucket_elems = d.zero.prefetch_bucket_elems;
  in.max_live_parameters = d.zero.max_live_parameters;
  in.staged_half_reductions = o.device != "cuda";
  in.cuda = o.device == "cuda";
  in.async_save = o.async_save && !o.save.empty();
  in.optimizer_tier = d.zero.optimizer_tier.tier;
  in.sub_group_elems = d.zero.optimizer_tier.chunk_elems;
  in.param_tier = d.zero.param_tier.tier;
  return in;
}

MemoryBudget memory_budget(const TrainOptions& o, bool cpu, int local_ranks) {
  MemoryBudget b;
  b.host = cpu;
  if (cpu) {
    const double machine = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                           static_cast<double>(::sysconf(_SC_PAGE_SIZE));
    b.bytes = machine / std::max(local_ranks, 1);
    b.source = fmt::format("this machine's {} of memory shared by {} local rank(s)", gb(machine),
                           std::max(local_ranks, 1));
    // What the process can still get (a ulimit, a cgroup, what others use) is often less; no
    // margin is taken off: the plan is what the pool will hold, and an allocation beyond it
    // still ends in one line (apps/cmd_train.cpp).
    if (const HostMemory left = available_host_memory(local_ranks);
        left.bytes >= 0 && left.bytes < b.bytes) {
      b.bytes = std::max(left.bytes, 1.0);  // 0 would read as "no bound"
      b.source = left.source;
    }
  }
  if (o.device_memory > 0) {
    // On the CPU, --device-memory is one allocation made up front.
    ZT_REQUIRE(!cpu || o.device_memory <= b.bytes, "--device-memory {} is more than {} ({})",
               gb(o.device_memory), gb(b.bytes), b.source);
    b.bytes = o.device_memory;
    b.source = fmt::format("--device-memory {}", gb(o.device_memory));
  }
  return b;
}

// From the layout of the same model with one layer per virtual stage, its layers scaled to the
// stage's count.
double last_stage_params(const PlanInput& in) {
  GptConfig one = in.model;
  one.num_layers = in.pp * in.chunks;
  const ParamLayout layout = ParamLayout::gpt(one, in.tp, 0, {in.pp, in.pp - 1, in.chunks});
  double layer = 0;
  for (const BlockRange& b : layout.blocks())
    if (b.name.starts_with("layers.")) layer = static_cast<double>(b.numel());
  const PipelineSplit split{in.model.num_layers, in.pp, in.chunks, in.first_stage_layers,
                            in.last_stage_layers};
  const int layers = stage_layer_count(split, in.pp - 1);
  return static_cast<double>(layout.numel()) + (layers - in.chunks) * layer;
}

void check_plan_fits(const TrainOptions& o, int dp, const MemoryBudget& budget) {
  if (budget.bytes <= 0) return;
  const PlanInput in = plan_input_from(o, dp);
  const GptConfig& c = in.model;
  const double tp = in.tp;
  // Lower bounds for the last pipeline stage (the whole model without a pipeline), in double:
  // every stage keeps at least ZeRO-3's 16 bytes per parameter of the rank's shard (2+2+12 in
  // half precision, more in fp32) of its tensor-parallel layout (its layers, final norm and
  // output layer or tied embedding: the layout's own count), and holds the fp32 logits and one
  // layer's activations (even with checkpoints on the host, the layer in flight keeps at least
  // its qkv, attention output, MLP input and two residual tensors, 2 bytes each).
  const double h = c.hidden, T = c.local_seq(), n = in.micro_batch * T;
  const double params = last_stage_params(in);
  // Offloaded optimizer states leave the working parameters and gradients (2 + 2 bytes), and
  // from a device of its own at stages 2-3 the gradients go too; offloaded parameters leave
  // the gradients.
  const double state_bytes = (in.optimizer_tier == StateTier::Device ? 12 : 0) +
                             (in.param_tier == StateTier::Device ? 2 : 0) +
                             (grads_offloaded(in.zero_stage, in.optimizer_tier, in.cuda) ? 0 : 2);
  const double states = state_bytes * params / in.dp;  // over the data × context ranks
  const double acts = n * (c.padded_vocab_size / tp) * 4 + n * (8 * h / tp + 2 * h) * 2;
  if (states + acts > budget.bytes) {
    if (states >= acts) refuse("at least ", states + acts, "model states", states, budget);
    refuse("at least ", states + acts, "activations", acts, budget);
  }
  // Every stage's own plan: a pipeline stage holds its layers only, and every rank must fit.
  using Parts = std::array<std::pair<std::string_view, double>, 11>;
  auto parts_of = [&](const MemoryPlan& p) {
    return Parts{{
        {"params", static_cast<double>(p.params)},
        {"grads", static_cast<double>(p.grads)},
        {"optimizer states", static_cast<double>(p.optimizer)},
        {"activations", static_cast<double>(p.activations)},
        {"checkpoints", static_cast<double>(p.checkpoints)},
        {"buffers", static_cast<double>(p.buffers)},
        {"host checkpoints", budget.host ? static_cast<double>(p.host_checkpoints) : 0.0},
        {"host snapshot", budget.host ? static_cast<double>(p.host_snapshot) : 0.0},
        {"NVMe buffers", budget.host ? static_cast<double>(p.nvme_buffers) : 0.0},
        {"host params", budget.host ? static_cast<double>(p.host_params) : 0.0},
        {"host grads", budget.host ? static_cast<double>(p.host_grads) : 0.0},
    }};
  };
  auto total_of = [](const Parts& parts) {
    double total = 0;
    for (const auto& part : parts) total += part.second;
    return total;
  };
  const std::vector<MemoryPlan> stages = plan_stages(in);
  size_t worst = 0;
  for (size_t k = 1; k < stages.size(); ++k)
    if (total_of(parts_of(stages[k])) > total_of(parts_of(stages[worst]))) worst = k;
  const Parts parts = parts_of(stages[worst]);
  const double total = total_of(parts);
  if (total <= budget.bytes) return;
  const auto largest = std::max_element(
      parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  refuse("", total, largest->first, largest->second, budget,
         in.pp > 1 ? fmt::format(" on pipeline stage {} of {}", worst, in.pp) : std::string());
}

void check_offload_fits(const TrainOptions& o, int dp, bool cpu, int local_ranks) {
  if (o.offload_optimizer == "none" && o.offload_param == "none") return;
  for (const auto& [flag, value] : {std::pair{"--offload-optimizer", o.offload_optimizer},
                                    std::pair{"--offload-param", o.offload_param}})
    ZT_REQUIRE(!(cpu && value == "cpu"),
               "{} cpu: on the CPU backend the device's memory is the host's, so there is nothing "
               "to move; the tier below RAM is nvme ({} nvme --nvme-path DIR)",
               flag, flag);
  const std::vector<MemoryPlan> stages = plan_stages(plan_input_from(o, dp));
  uint64_t nvme = 0;
  double host = 0;
  for (const MemoryPlan& p : stages) {
    nvme = std::max(nvme, p.nvme_bytes);
    host = std::max(host, static_cast<double>(p.host_optimizer + p.host_params + p.host_grads));
  }
  const auto ranks = static_cast<uint64_t>(std::max(local_ranks, 1));
  if (o.offload_optimizer == "nvme" || o.offload_param == "nvme") {
    require_writable_dir(o.nvme_path, "--nvme-path");
    require_free_space(o.nvme_path, nvme * ranks,
                       fmt::format("the NVMe tier of {} local rank(s)", ranks));
  }
  if (host <= 0) return;
  const HostMemory left = available_host_memory(local_ranks);
  ZT_REQUIRE(left.bytes < 0 || host <= left.bytes,
             "the offloaded states need {} of host memory per rank, more than {} ({}); use the "
             "nvme tier (--offload-optimizer nvme, --offload-param nvme, --nvme-path DIR), a "
             "higher --zero-stage or more ranks",
             gb(host), gb(left.bytes), left.source);
}

}  // namespace zt
