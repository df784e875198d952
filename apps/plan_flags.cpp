#include "apps/plan_flags.h"

#include <cstdio>
#include <string>

#include "src/config/derive.h"
#include "src/core/input_file.h"

#include "src/planner/shape_rule.h"
#include "src/planner/train_plan.h"

namespace zt::app {

std::vector<FlagSpec> plan_flag_specs() {
  return {
      {"--num-parameters", "P",
       "instead of --num-layers/--hidden-size: e.g. 7.5e9, shaped by head size 128, h~128L"},
      {"--data-parallel-size", "D", "data-parallel ranks (default 1)"},
      {"--world-size", "W", "all ranks (data parallel = W / tensor parallel)"},
  };
}

std::optional<PlanArgs> parse_plan_args(std::string_view command,
                                        const std::vector<FlagSpec>& specs, Args args) {
  PlanArgs a{parse_train_flags(args), {}};
  if (a.train.help) {
    ParsedFlags::parse(command, specs, std::vector<std::string_view>{"--help"});
    std::printf(
        "\nand the model, layout, precision, batch, activation and memory flags of 'zerotron "
        "train' (see 'zerotron train --help'), with the same defaults; --vocab-size is needed\n");
    return std::nullopt;
  }
  auto plan = ParsedFlags::parse(command, specs, a.train.rest);
  if (!plan) return std::nullopt;
  a.plan = std::move(*plan);
  return a;
}

void finish_plan_input(PlanInput& in, std::string_view command) {
  in.model.padded_vocab_size =
      padded_vocab_size(in.model.vocab_size, in.make_vocab_divisible_by, in.tp);
  validate_tensor_parallel(in.model, in.tp);
  ZT_REQUIRE(in.model.hidden % in.model.heads == 0,
             "{}: --num-attention-heads ({}) must divide --hidden-size ({})", command,
             in.model.heads, in.model.hidden);
}

namespace {

// train's pipeline checks (layers over stages and chunks, ZeRO stage <= 1, the interleaved
// schedule's micro-batches), on the planned model; --save/--load do not concern a plan.
void check_pipeline(TrainOptions o, int dp, std::string_view command) {
  o.save.clear();
  o.load.clear();
  try {
    validate_pipeline_options(o, batch_config(o, dp).accumulation);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", command, e.what()));
  }
}

}  // namespace

PlanInput plan_input_from_args(const PlanArgs& a, std::string_view command) {
  const ParsedFlags& f = a.plan;
  TrainOptions o = a.train.options;
  ZT_REQUIRE(o.vocab_size > 0, "{}: give --vocab-size (train takes it from --vocab-file)", command);
  ZT_REQUIRE(!(f.has("--data-parallel-size") && f.has("--world-size")),
             "{}: give --data-parallel-size or --world-size, not both", command);
  const int tp = o.tensor_model_parallel_size;
  const int pp = o.pipeline_model_parallel_size;
  int dp = 1;
  if (f.has("--world-size")) {
    const int64_t w = f.integer("--world-size", 1, 1, 1 << 24);
    ZT_REQUIRE(w % (int64_t{tp} * pp) == 0, "{}: --world-size {} is not divisible by tp {} x pp {}",
               command, w, tp, pp);
    dp = static_cast<int>(w / (int64_t{tp} * pp));
  } else {
    dp = static_cast<int>(f.integer("--data-parallel-size", 1, 1, 1 << 24));
  }
  if (o.global_batch_size != 0) {
    const int64_t per = int64_t{o.micro_batch_size} * dp;
    ZT_REQUIRE(o.global_batch_size % per == 0,
               "{}: --global-batch-size {} is not a multiple of micro batch x dp = {}", command,
               o.global_batch_size, per);
  }
  ZT_REQUIRE(!o.partition_activations || o.checkpoint_activations,
             "{}: --partition-activations needs --checkpoint-activations", command);
  ZT_REQUIRE(!o.cpu_checkpointing || o.partition_activations,
             "{}: --cpu-checkpointing needs --partition-activations (DeepSpeed's rule)", command);
  ZT_REQUIRE(!(o.fp16 && o.bf16), "{}: --fp16 and --bf16 are exclusive", command);
  ZT_REQUIRE(o.zero_stage <= 3, "{}: --zero-stage must be 0, 1, 2 or 3", command);
  // Planning is for the GPU clusters: auto means cuda here.
  if (o.device == "auto") o.device = "cuda";
  if (f.has("--num-parameters")) {
    ZT_REQUIRE(!a.train.has("num-layers") && !a.train.has("hidden-size"),
               "{}: give --num-parameters or the shape, not both", command);
    const std::string text = f.str("--num-parameters");
    double target = 0;
    size_t used = 0;
    try {
      target = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    ZT_REQUIRE(used == text.size() && target >= 1e6 && target <= 1e15,
               "{}: --num-parameters expects a count in [1e6, 1e15], got '{}'", command,
               excerpt(text));
    PlanInput in = plan_input_from(o, dp);
    shape_for_parameters(target, in.model, tp);
    o.num_layers = in.model.num_layers;  // the pipeline's chunks and checks follow the shape
    in.chunks = model_chunks(o);
    check_pipeline(o, dp, command);
    finish_plan_input(in, command);
    return in;
  }
  ZT_REQUIRE(
      a.train.has("num-layers") && a.train.has("hidden-size") && a.train.has("num-attention-heads"),
      "{}: give --num-layers, --hidden-size and --num-attention-heads, or --num-parameters",
      command);
  check_pipeline(o, dp, command);
  PlanInput in = plan_input_from(o, dp);
  finish_plan_input(in, command);
  return in;
}

}  // namespace zt::app
