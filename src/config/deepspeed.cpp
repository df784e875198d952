#include "src/config/deepspeed.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "src/config/options.h"
#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/core/json_input.h"

namespace zt {
namespace {

bool starts_with_section(const std::string& key, std::string_view section) {
  return key == section ||
         (key.size() > section.size() && key.starts_with(section) && key[section.size()] == '.');
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool is_true(const nlohmann::json& v) {
  return (v.is_boolean() && v.get<bool>()) || (v.is_number() && v.get<double>() != 0);
}

// Keys of features zerotron does not have whose absence leaves the math as it is: ZeRO++'s
// hierarchical partition and MiCS are placements, the monitors, profilers and tuners observe. Each
// is ignored, with one warning unless its value is `neutral` (JSON: DeepSpeed's default, or the
// switch that leaves the feature off), which is what zerotron does anyway. A section is judged by
// its "enabled" or "device" key; "*": never warned (a permission or a detail with no meaning here);
// "": always warned.
struct Ignored {
  std::string_view key, neutral;
};
constexpr Ignored kIgnored[] = {
    {"zero_optimization.cpu_offload_use_pin_memory", "*"},
    // Gradient partitions are one pre-allocated buffer by construction (zero-stages.md).
    {"zero_optimization.contiguous_gradients", "true"},
    {"zero_optimization.stage3_max_reuse_distance", "*"},
    {"zero_optimization.stage3_gather_16bit_weights_on_model_save", "false"},
    {"zero_optimization.stage3_gather_fp16_weights_on_model_save", "false"},
    {"zero_optimization.gather_16bit_weights_on_model_save", "false"},
    {"zero_optimization.stage3_module_granularity_threshold", "0"},
    {"zero_optimization.ignore_unused_parameters", "true"},
    {"zero_optimization.round_robin_gradients", "false"},
    {"zero_optimization.elastic_checkpoint", "false"},
    {"zero_optimization.load_from_fp32_weights", "true"},
    {"zero_optimization.allgather_partitions", "true"},
    {"zero_optimization.reduce_scatter", "true"},
    {"zero_optimization.compute_grad_norm", "true"},
    {"zero_optimization.parameter_alignment", "false"},
    {"zero_optimization.zero_hpz_partition_size", "1"},
    {"zero_optimization.mics_shard_size", "-1"},
    {"zero_optimization.mics_hierarchical_params_gather", "false"},
    {"zero_optimization.log_trace_cache_warnings", "false"},
    {"zero_optimization.memory_efficient_linear", "*"},
    {"zero_optimization.use_multi_rank_bucket_allreduce", "*"},
    {"zero_optimization.legacy_stage1", "false"},
    {"activation_checkpointing.contiguous_memory_optimization", "false"},
    {"activation_checkpointing.number_checkpoints", "null"},
    {"activation_checkpointing.synchronize_checkpoint_boundary", "false"},
    {"activation_checkpointing.profile", "false"},
    {"fp16.auto_cast", "false"},
    {"optimizer.params.torch_adam", "*"},
    {"prescale_gradients", "false"},
    {"gradient_predivide_factor", "1.0"},
    {"sparse_gradients", "false"},
    {"zero_allow_untested_optimizer", "*"},
    {"zero_force_ds_cpu_optimizer", "*"},
    {"dump_state", "false"},
    {"memory_breakdown", "false"},
    {"flops_profiler", "false"},
    {"autotuning", "false"},
    {"comms_logger", "false"},
    {"tensorboard", "false"},
    {"wandb", "false"},
    {"csv_monitor", "false"},
    {"comet", "false"},
    {"nebula", "false"},
    {"hybrid_engine", "false"},
    {"compile", "false"},
    // DeepSpeed aio's thread and submission settings: zerotron's one io_uring ring per rank.
    {"aio.thread_count", "*"},
    {"aio.single_submit", "*"},
    {"aio.overlap_events", "*"},
    {"aio.use_gds", "false"},
    {"checkpoint", ""},
    {"data_types", ""},
    {"timers", "*"},
    {"tensor_parallel", ""},
    {"pipeline", ""},
    {"weight_quantization", ""},
};

// Sections whose feature, when enabled, changes what is computed (the data, the model, the
// batch): refused when "enabled" is true, silent when it is false.
constexpr std::string_view kRefusedWhenEnabled[] = {
    "amp",
    "torch_autocast",
    "curriculum_learning",
    "data_efficiency",
    "elasticity",
    "expert_parallel",
    "progressive_layer_drop",
    "eigenvalue",
    "quantize_training",
};

// Sections refused whatever they hold: each changes the model's math.
constexpr std::string_view kRefusedSections[] = {"sparse_attention", "compression_training", "moe"};

}  // namespace

DeepSpeedKeys::DeepSpeedKeys(ConfigDialect dialect, std::string where, SetOption set)
    : dialect_(dialect), where_(std::move(where)), set_(std::move(set)) {}

void DeepSpeedKeys::warn(const std::string& section, const std::string& why) {
  if (!warned_.insert(section).second) return;
  warnings_.push_back(fmt::format("zerotron: warning: {}: '{}' ignored: {}", where_, section, why));
}

void DeepSpeedKeys::refuse_unless(bool neutral, const std::string& key, const nlohmann::json& value,
                                  std::string_view why) const {
  ZT_REQUIRE(neutral, "{}: '{}': {} is not supported: {}", where_, key, json_excerpt(value), why);
}

void DeepSpeedKeys::set_number(std::string_view flag, const std::string& key,
                               const nlohmann::json& v) const {
  ZT_REQUIRE(v.is_number(), "{}: key '{}' must be a number, got {} {}", where_, key,
             json_type_name(v), json_excerpt(v));
  set_(flag, v.dump());
}

bool DeepSpeedKeys::optimizer_key(const std::string& key, const nlohmann::json& v) {
  if (key == "optimizer.type") {
    const std::string type = v.is_string() ? lower(v.get<std::string>()) : "";
    // DeepSpeed's Adam applies weight decay decoupled (adam_w_mode, default true): AdamW, which
    // is zerotron's Adam.
    refuse_unless(type == "adam" || type == "adamw", key, v,
                  "zerotron's optimizer is AdamW (DeepSpeed's Adam and AdamW)");
    return true;
  }
  if (key == "optimizer.params.lr")
    set_number("lr", key, v);
  else if (key == "optimizer.params.eps")
    set_number("adam-eps", key, v);
  else if (key == "optimizer.params.weight_decay")
    set_number("weight-decay", key, v);
  else if (key == "optimizer.params.betas") {
    ZT_REQUIRE(v.is_array() && v.size() == 2 && v[0].is_number() && v[1].is_number(),
               "{}: key '{}' must be two numbers, got {}", where_, key, json_excerpt(v));
    set_("adam-beta1", v[0].dump());
    set_("adam-beta2", v[1].dump());
  } else if (key == "optimizer.params.adam_w_mode") {
    refuse_unless(v == true, key, v, "zerotron's weight decay is decoupled (AdamW)");
  } else if (key == "optimizer.params.bias_correction") {
    refuse_unless(v == true, key, v, "zerotron's Adam corrects the moments' bias");
  } else if (key == "optimizer.params.amsgrad") {
    refuse_unless(v == false, key, v, "zerotron's Adam is not AMSGrad");
  } else {
    return false;
  }
  return true;
}

// DeepSpeed's WarmupLR, WarmupDecayLR and WarmupCosineLR are Megatron's schedule with a linear
// warm-up from 0: constant, linear and cosine decay. Their values are set here and checked in
// finish(), when the type and warm-up shape are known.
bool DeepSpeedKeys::scheduler_key(const std::string& key, const nlohmann::json& v) {
  if (key == "scheduler.type") {
    ZT_REQUIRE(v.is_string(), "{}: key '{}' must be a string", where_, key);
    scheduler_type_ = v.get<std::string>();
    refuse_unless(scheduler_type_ == "WarmupLR" || scheduler_type_ == "WarmupDecayLR" ||
                      scheduler_type_ == "WarmupCosineLR",
                  key, v,
                  "zerotron's learning-rate schedule is Megatron's: a linear warm-up, then "
                  "constant, linear or cosine decay (WarmupLR, WarmupDecayLR, WarmupCosineLR)");
    return true;
  }
  if (key == "scheduler.params.warmup_type") {
    warmup_type_ = v.is_string() ? v.get<std::string>() : v.dump();
  } else if (key == "scheduler.params.warmup_min_lr" ||
             key == "scheduler.params.warmup_min_ratio") {
    refuse_unless(v.is_number() && v.get<double>() == 0, key, v,
                  "zerotron's warm-up starts from a learning rate of 0");
  } else if (key == "scheduler.params.warmup_max_lr") {
    set_number("lr", key, v);
  } else if (key == "scheduler.params.warmup_num_steps") {
    set_number("lr-warmup-iters", key, v);
  } else if (key == "scheduler.params.total_num_steps") {
    set_number("lr-decay-iters", key, v);
  } else if (key == "scheduler.params.cos_min_ratio") {
    ZT_REQUIRE(v.is_number() && v.get<double>() >= 0 && v.get<double>() <= 1,
               "{}: key '{}' must be a number in [0, 1]", where_, key);
    cos_min_ratio_ = v.get<double>();
  } else if (key == "scheduler.params.last_batch_iteration") {
    refuse_unless(v == -1, key, v, "a schedule starts at its first step (resume with --load)");
  } else {
    return false;
  }
  given_.insert(key);
  return true;
}

bool DeepSpeedKeys::take(const std::string& key, const nlohmann::json& value) {
  // "auto": the value the flags (or their defaults) give, as the Hugging Face integration fills
  // it in.
  if (value.is_string() && value.get<std::string>() == "auto") {
    auto_.insert(key);
    return true;
  }
  if (key == "fp16.initial_scale_power") {
    ZT_REQUIRE(value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() <= 32,
               "{}: key '{}' must be an integer in [0, 32] (the scale is 2^power), got {}", where_,
               key, json_excerpt(value));
    set_("initial-loss-scale", fmt::format("{}", std::ldexp(1.0, value.get<int>())));
    given_.insert(key);
    return true;
  }
  if (key == "fp16.min_loss_scale" && value.is_number() && value.get<double>() == 0) {
    // DeepSpeed's 0: no floor. fp16's smallest subnormal is the lowest scale that can matter.
    set_("min-loss-scale", fmt::format("{}", std::ldexp(1.0, -24)));
    return true;
  }
  if (key == "fp16.consecutive_hysteresis") {
    refuse_unless(value == false, key, value,
                  "zerotron's hysteresis is refilled only by a clean window (Megatron's)");
    return true;
  }
  if (key == "fp16.fp16_master_weights_and_grads" || key == "bf16.bf16_master_weights_and_grads" ||
      key == "bf16.bf16_optimizer_states") {
    refuse_unless(value == false, key, value,
                  "zerotron keeps fp32 master weights, gradients' reduction and Adam moments");
    return true;
  }
  if (key == "sequence_parallel_size") {
    // DeepSpeed-Ulysses (and ALST): each sequence over this many ranks, attention by all-to-all
    // over the heads — zerotron's context parallelism with the all-to-all.
    ZT_REQUIRE(
        value.is_number_integer() && value.get<int64_t>() >= 1 && value.get<int64_t>() <= 1 << 20,
        "{}: key '{}' must be a positive integer, got {}", where_, key, json_excerpt(value));
    set_("context-parallel-size", fmt::format("{}", value.get<int64_t>()));
    set_("cp-comm-type", "a2a");
    given_.insert(key);
    return true;
  }
  if (key == "bfloat16.enabled") {  // DeepSpeed's older name of the bf16 section
    set_("bf16", is_true(value) ? "true" : "false");
    return true;
  }
  if (key == "zero_optimization" && value.is_boolean()) {  // DeepSpeed's older form: stage 1
    set_("zero-stage", value.get<bool>() ? "1" : "0");
    return true;
  }
  if (key == "zero_optimization.zero_quantized_weights" ||
      key == "zero_optimization.zero_quantized_gradients" ||
      key == "zero_optimization.zero_quantized_nontrainable_weights") {
    refuse_unless(value == false, key, value,
                  "ZeRO++ quantized communication changes the values reduced and gathered");
    return true;
  }
  if (starts_with_section(key, "zero_optimization.offload_optimizer")) {
    const std::string sub =
        key.substr(std::string_view("zero_optimization.offload_optimizer").size());
    // Host buffers are pinned and the read/step/write pipeline always runs.
    if (sub == ".pin_memory" || sub == ".buffer_count" || sub == ".fast_init" ||
        sub == ".pipeline" || sub == ".pipeline_read" || sub == ".pipeline_write")
      return true;
    if (sub == ".ratio") {
      refuse_unless(value.is_number() && value.get<double>() == 1.0, key, value,
                    "zerotron offloads every optimizer state (ratio 1)");
      return true;
    }
    return false;  // device, nvme_path: options of their own
  }
  if (starts_with_section(key, "zero_optimization.offload_param")) {
    const std::string sub = key.substr(std::string_view("zero_optimization.offload_param").size());
    // Host buffers are pinned; the gather slots are the prefetch policy's (buffer_count,
    // buffer_size); nothing stays on the host beyond the partition (max_in_cpu).
    if (sub == ".pin_memory" || sub == ".buffer_count" || sub == ".buffer_size" ||
        sub == ".max_in_cpu")
      return true;
    if (sub == ".nvme_path") {  // one directory holds both tiers' swap files: finish()
      ZT_REQUIRE(value.is_string(), "{}: key '{}' must be a string", where_, key);
      param_nvme_path_ = value.get<std::string>();
      return true;
    }
    return false;  // device: an option of its own
  }
  if (key == "zero_optimization.cpu_offload_params") {  // DeepSpeed's older form of offload_param
    ZT_REQUIRE(value.is_boolean(), "{}: key '{}' must be true or false", where_, key);
    set_("offload-param", value.get<bool>() ? "cpu" : "none");
    return true;
  }
  if (key == "zero_optimization.cpu_offload") {  // DeepSpeed's older form of the above
    ZT_REQUIRE(value.is_boolean(), "{}: key '{}' must be true or false", where_, key);
    set_("offload-optimizer", value.get<bool>() ? "cpu" : "none");
    return true;
  }
  if (key == "communication_data_type") {
    refuse_unless(value.is_null(), key, value,
                  "zerotron reduces gradients in the working precision (fp32 for fp32 runs)");
    return true;
  }
  if (key == "gradient_allreduce_op") {
    refuse_unless(value == "mean", key, value, "zerotron averages gradients over ranks");
    return true;
  }
  if (key == "steps_per_print") {
    set_number("log-interval", key, value);
    given_.insert(key);
    return true;
  }
  if (key == "wall_clock_breakdown") {
    ZT_REQUIRE(value.is_boolean(), "{}: key '{}' must be true or false", where_, key);
    // The console line and --metrics-file already carry each step's time, its exposed
    // communication time and the pipeline bubble: nothing more to turn on.
    return true;
  }
  if (starts_with_section(key, "optimizer")) {
    if (optimizer_key(key, value)) return true;
  }
  if (starts_with_section(key, "scheduler")) {
    if (scheduler_key(key, value)) return true;
  }
  for (std::string_view s : kRefusedSections)
    if (starts_with_section(key, s))
      refuse_unless(false, key, value, fmt::format("'{}' changes the model's math", s));
  for (std::string_view s : kRefusedWhenEnabled)
    if (starts_with_section(key, s)) {
      if (key == std::string(s) + ".enabled")
        refuse_unless(!is_true(value), key, value,
                      fmt::format("zerotron has no '{}', and it changes what is computed", s));
      return true;  // the settings of a feature left off
    }
  for (const Ignored& e : kIgnored) {
    if (!starts_with_section(key, e.key)) continue;
    if (e.neutral == "*") return true;
    const std::string sub = key.size() > e.key.size() ? key.substr(e.key.size() + 1) : "";
    // A section's other settings follow its switch, which is judged on its own.
    if (!e.neutral.empty() && !sub.empty() && sub != "enabled" && sub != "device") return true;
    if (e.neutral.empty() || value != nlohmann::json::parse(e.neutral))
      warn(std::string(e.key), "zerotron has no such feature, and the math is the same without it");
    return true;
  }
  return false;
}

void DeepSpeedKeys::unknown(const std::string& key) {
  ZT_REQUIRE(dialect_ == ConfigDialect::DeepSpeed,
             "unknown key '{}' in {} (a DeepSpeed config: --deepspeed-config)", excerpt(key, 80),
             where_);
  // A section DeepSpeed's documentation does not have is named once, not once per setting.
  static constexpr std::string_view kKnown[] = {"fp16",
                                                "bf16",
                                                "bfloat16",
                                                "optimizer",
                                                "scheduler",
                                                "zero_optimization",
                                                "activation_checkpointing"};
  const std::string top = key.substr(0, key.find('.'));
  bool known = false;
  for (std::string_view k : kKnown) known |= top == k;
  warn(known ? key : top, "not a key zerotron knows (DeepSpeed ignores unknown keys too)");
}

void DeepSpeedKeys::finish(TrainOptions& o) const {
  if (!param_nvme_path_.empty()) {
    ZT_REQUIRE(o.nvme_path.empty() || o.nvme_path == param_nvme_path_,
               "{}: 'zero_optimization.offload_param.nvme_path' ({}) differs from the optimizer's "
               "({}): zerotron keeps both tiers' swap files in one directory (--nvme-path)",
               where_, param_nvme_path_, o.nvme_path);
    if (o.nvme_path.empty()) set_("nvme-path", param_nvme_path_);
  }
  const bool train = given_.count("train_batch_size") != 0,
             micro = given_.count("train_micro_batch_size_per_gpu") != 0;
  // DeepSpeed: train_batch_size alone or with gradient_accumulation_steps sets the micro batch,
  // which needs the data-parallel size: 0 until resolve_micro_batch. With micro alone or none,
  // gradient_accumulation_steps (1 when absent) and the micro batch give the global batch.
  if (train && !micro) {
    o.micro_batch_size = 0;
    if (o.gradient_accumulation_steps == 0) o.gradient_accumulation_steps = 1;
  }
  if (dialect_ == ConfigDialect::DeepSpeed) {
    // DeepSpeed's defaults where zerotron's (Megatron's) differ.
    if (!has("fp16.initial_scale_power") && !has("fp16.initial_loss_scale"))
      set_("initial-loss-scale", fmt::format("{}", std::ldexp(1.0, 16)));
    if (!has("steps_per_print") && !has("log_interval")) set_("log-interval", "10");
  }
  if (scheduler_type_.empty()) return;
  // DeepSpeed's scheduler defaults: 1000 warm-up steps to 0.001, decay over 10000 steps.
  const bool cosine = scheduler_type_ == "WarmupCosineLR";
  if (!has("scheduler.params.warmup_num_steps")) set_("lr-warmup-iters", "1000");
  if (!cosine && !has("scheduler.params.warmup_max_lr")) set_("lr", "0.001");
  if (scheduler_type_ != "WarmupLR" && !has("scheduler.params.total_num_steps"))
    set_("lr-decay-iters", "10000");
  // DeepSpeed's warm-up is logarithmic unless warmup_type says linear.
  ZT_REQUIRE(warmup_type_.empty() || warmup_type_ == "log" || warmup_type_ == "linear",
             "{}: 'scheduler.params.warmup_type' must be \"log\" or \"linear\", got {}", where_,
             excerpt(warmup_type_));
  set_("lr-warmup-style", warmup_type_.empty() ? "log" : warmup_type_);
  if (scheduler_type_ == "WarmupLR") {
    set_("lr-decay-style", "constant");
  } else {
    set_("lr-decay-style", cosine ? "cosine" : "linear");
    // WarmupDecayLR decays to 0, WarmupCosineLR to cos_min_ratio x the peak.
    set_("min-lr", fmt::format("{}", o.lr * cos_min_ratio_));
  }
}

void resolve_micro_batch(TrainOptions& o, int dp) {
  if (o.micro_batch_size != 0) return;
  const int64_t per_micro = int64_t{o.gradient_accumulation_steps} * dp;
  ZT_REQUIRE(o.global_batch_size > 0 && o.global_batch_size % per_micro == 0,
             "train_batch_size ({}) must be a multiple of gradient_accumulation_steps ({}) x "
             "data-parallel size ({}) (DeepSpeed's micro batch = their quotient)",
             o.global_batch_size, o.gradient_accumulation_steps, dp);
  o.micro_batch_size = static_cast<int>(o.global_batch_size / per_micro);
}

}  // namespace zt
