#include "apps/plan_flags.h"

#include <fmt/format.h>
#include <cstdio>
#include <string>

#include "src/config/deepspeed.h"
#include "src/config/derive.h"
#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/planner/model_presets.h"
#include "src/planner/shape_rule.h"
#include "src/planner/train_plan.h"

namespace zt::app {

std::vector<FlagSpec> plan_flag_specs() {
  static const std::string preset_help =
      "a published model's shape and architecture (its Hugging Face config.json; flags given "
      "override it): " +
      model_preset_names();
  return {
      {"--num-parameters", "P",
       "instead of --num-layers/--hidden-size: e.g. 7.5e9, shaped by head size 128, h~128L"},
      {"--preset", "NAME", preset_help},
      {"--data-parallel-size", "D", "data-parallel ranks (default 1)"},
      {"--world-size", "W", "all ranks (data parallel = W / tensor parallel)"},
  };
}

std::optional<PlanArgs> parse_plan_args(std::string_view command,
                                        const std::vector<FlagSpec>& specs, Args args) {
  PlanArgs a{parse_train_flags(command, args, arity_of(specs), flag_names(specs)), {}};
  if (a.train.help) {
    print_usage(command, specs);
    std::printf(
        "\nand the model, layout, precision, batch, activation and memory flags of 'zerotron "
        "train' (see 'zerotron train --help'), with the same defaults; --vocab-size is needed\n");
    return std::nullopt;
  }
  a.plan = ParsedFlags::from_scanned(command, specs, a.train.rest);
  return a;
}

PlanInput plan_input_from_args(const PlanArgs& a, std::string_view command) {
  const ParsedFlags& f = a.plan;
  TrainOptions o = a.train.options;
  if (f.has("--preset")) {
    ZT_REQUIRE(!f.has("--num-parameters"), "{}: give --preset or --num-parameters, not both",
               command);
    try {
      apply_model_preset(f.str("--preset"), a.train, o);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", command, e.what()));
    }
  }
  ZT_REQUIRE(o.vocab_size > 0, "{}: give --vocab-size (train takes it from --vocab-file)", command);
  ZT_REQUIRE(!(f.has("--data-parallel-size") && f.has("--world-size")),
             "{}: give --data-parallel-size or --world-size, not both", command);
  const int tp = o.tensor_model_parallel_size;
  const int pp = o.pipeline_model_parallel_size;
  const int cp = o.context_parallel_size;
  int dp = 1;  // the data-parallel degree, without the context ranks
  if (f.has("--world-size")) {
    const int64_t w = f.integer("--world-size", 1, 1, 1 << 24);
    ZT_REQUIRE(w % (int64_t{tp} * pp * cp) == 0,
               "{}: --world-size {} is not divisible by tp {} x pp {} x cp {}", command, w, tp, pp,
               cp);
    dp = static_cast<int>(w / (int64_t{tp} * pp * cp));
  } else {
    dp = static_cast<int>(f.integer("--data-parallel-size", 1, 1, 1 << 24));
  }
  resolve_micro_batch(o, dp);
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
    GptConfig shape = gpt_config_from(o);
    shape_for_parameters(target, shape, tp);
    o.num_layers = shape.num_layers;
    o.hidden_size = shape.hidden;
    o.num_attention_heads = shape.heads;
  } else if (!f.has("--preset")) {
    ZT_REQUIRE(
        a.train.has("num-layers") && a.train.has("hidden-size") &&
            a.train.has("num-attention-heads"),
        "{}: give --num-layers, --hidden-size and --num-attention-heads, or --num-parameters",
        command);
  }
  // train's own checks of the shape and the layout; --save, --load and the data do not concern
  // a plan.
  try {
    validate_layout_options(o, dp);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", command, e.what()));
  }
  return plan_input_from(o, dp);
}

std::string data_text(const PlanInput& in) {
  std::string s =
      in.cp == 1 ? std::to_string(in.dp) : fmt::format("{} x cp {}", in.dp / in.cp, in.cp);
  if (in.model.expert_parallel > 1)
    s += fmt::format(" (experts: ep {} x edp {})", in.model.expert_parallel,
                     in.dp / in.model.expert_parallel);
  return s;
}

}  // namespace zt::app
