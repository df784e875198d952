#include "apps/plan_flags.h"

#include <cmath>
#include <string>

#include "src/planner/shape_rule.h"

namespace zt::app {

std::vector<FlagSpec> plan_flag_specs() {
  return {
      {"--num-layers", "N", "transformer layers"},
      {"--hidden-size", "H", "model width"},
      {"--num-attention-heads", "A", "attention heads"},
      {"--num-parameters", "P",
       "instead of the shape: e.g. 7.5e9, shaped by head size 128, h~128L"},
      {"--seq-length", "S", "tokens per sample (default 1024)"},
      {"--vocab-size", "V", "vocabulary (default 50257)"},
      {"--make-vocab-size-divisible-by", "K", "vocabulary padding unit (times tp; default 128)"},
      {"--tensor-model-parallel-size", "T", "tensor-parallel ranks (default 1)"},
      {"--data-parallel-size", "D", "data-parallel ranks"},
      {"--world-size", "W", "all ranks (data parallel = W / T)"},
      {"--zero-stage", "Z", "0, 1, 2 or 3 (default 0)"},
      {"--fp16", "", "fp16 working precision"},
      {"--bf16", "", "bf16 working precision"},
      {"--micro-batch-size", "B", "sequences per rank per micro-batch (default 1)"},
      {"--gradient-accumulation", "G", "micro-batches per step (default 1)"},
      {"--checkpoint-activations", "", "activation checkpointing"},
      {"--checkpoint-num-layers", "N", "layers per checkpointed span (default 1)"},
      {"--partition-activations", "", "Pa"},
      {"--cpu-checkpointing", "", "Pa+cpu"},
      {"--reduce-bucket-size", "E", "ZeRO partition unit / reduce bucket, elements (default 5e8)"},
      {"--param-persistence-threshold", "E", "stage 3 (default 1e5)"},
      {"--max-live-parameters", "E", "stage 3 gathered elements (default 1e9)"},
      {"--device-memory", "BYTES", "e.g. 32GB: say whether it fits"},
      {"--device", "D",
       "cuda (default: NCCL reduces half tensors natively) or cpu (MPI stages them in fp32)"},
  };
}

double size_value(const ParsedFlags& f, std::string_view command, std::string_view name,
                  double fallback) {
  if (!f.has(name)) return fallback;
  std::string s = f.str(name);
  double scale = 1;
  for (const auto& [suffix, mult] : {std::pair{"GiB", 1073741824.0}, std::pair{"MiB", 1048576.0},
                                     std::pair{"GB", 1e9}, std::pair{"MB", 1e6}}) {
    const std::string_view sf = suffix;
    if (s.size() > sf.size() && s.ends_with(sf)) {
      scale = mult;
      s.resize(s.size() - sf.size());
      break;
    }
  }
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  ZT_REQUIRE(used == s.size() && v >= 0 && std::isfinite(v), "{}: {} expects a size, got '{}'",
             command, name, f.str(name));
  return v * scale;
}

void finish_plan_input(PlanInput& in, std::string_view command) {
  in.model.padded_vocab_size =
      padded_vocab_size(in.model.vocab_size, in.make_vocab_divisible_by, in.tp);
  validate_tensor_parallel(in.model, in.tp);
  ZT_REQUIRE(in.model.hidden % in.model.heads == 0,
             "{}: --num-attention-heads ({}) must divide --hidden-size ({})", command,
             in.model.heads, in.model.hidden);
}

PlanInput plan_input_from_flags(const ParsedFlags& f, std::string_view command) {
  PlanInput in;
  in.model.seq_length = static_cast<int>(f.integer("--seq-length", 1024, 1, 1 << 24));
  in.model.vocab_size = static_cast<int>(f.integer("--vocab-size", 50257, 2, 1 << 30));
  if (f.has("--num-parameters")) {
    ZT_REQUIRE(!f.has("--num-layers") && !f.has("--hidden-size"),
               "{}: give --num-parameters or the shape, not both", command);
    const double target = size_value(f, command, "--num-parameters", 0);
    ZT_REQUIRE(target >= 1e6, "{}: --num-parameters must be at least 1e6", command);
    in.tp = static_cast<int>(f.integer("--tensor-model-parallel-size", 1, 1, 1 << 16));
    shape_for_parameters(target, in.model, in.tp);
  } else {
    ZT_REQUIRE(f.has("--num-layers") && f.has("--hidden-size") && f.has("--num-attention-heads"),
               "{}: give --num-layers, --hidden-size and --num-attention-heads, or "
               "--num-parameters",
               command);
    in.model.num_layers = static_cast<int>(f.integer("--num-layers", 0, 1, 1 << 20));
    in.model.hidden = static_cast<int>(f.integer("--hidden-size", 0, 1, 1 << 24));
    in.model.heads = static_cast<int>(f.integer("--num-attention-heads", 0, 1, 1 << 16));
  }
  in.tp = static_cast<int>(f.integer("--tensor-model-parallel-size", 1, 1, 1 << 16));
  ZT_REQUIRE(!(f.has("--data-parallel-size") && f.has("--world-size")),
             "{}: give --data-parallel-size or --world-size, not both", command);
  if (f.has("--world-size")) {
    const int64_t w = f.integer("--world-size", 1, 1, 1 << 24);
    ZT_REQUIRE(w % in.tp == 0, "{}: --world-size {} is not divisible by tp {}", command, w, in.tp);
    in.dp = static_cast<int>(w / in.tp);
  } else {
    in.dp = static_cast<int>(f.integer("--data-parallel-size", 1, 1, 1 << 24));
  }
  in.zero_stage = static_cast<int>(f.integer("--zero-stage", 0, 0, 3));
  const std::string device = f.str("--device", "cuda");
  ZT_REQUIRE(device == "cuda" || device == "cpu", "{}: --device takes cuda or cpu, got '{}'",
             command, device);
  in.staged_half_reductions = device == "cpu";
  ZT_REQUIRE(!(f.has("--fp16") && f.has("--bf16")), "{}: --fp16 and --bf16 are exclusive", command);
  in.working = f.has("--bf16") ? DType::BF16 : f.has("--fp16") ? DType::F16 : DType::F32;
  in.micro_batch = static_cast<int>(f.integer("--micro-batch-size", 1, 1, 1 << 20));
  in.accumulation = static_cast<int>(f.integer("--gradient-accumulation", 1, 1, 1 << 20));
  in.checkpoint_activations = f.has("--checkpoint-activations");
  in.checkpoint_num_layers = static_cast<int>(f.integer("--checkpoint-num-layers", 1, 1, 1 << 20));
  in.partition_activations = f.has("--partition-activations");
  in.cpu_checkpointing = f.has("--cpu-checkpointing");
  ZT_REQUIRE(in.checkpoint_activations || !(in.partition_activations || in.cpu_checkpointing),
             "{}: --partition-activations and --cpu-checkpointing need --checkpoint-activations",
             command);
  in.reduce_bucket_elems =
      static_cast<int64_t>(size_value(f, command, "--reduce-bucket-size", 5e8));
  ZT_REQUIRE(in.reduce_bucket_elems >= 1, "{}: --reduce-bucket-size must be positive", command);
  in.param_persistence_threshold =
      static_cast<int64_t>(size_value(f, command, "--param-persistence-threshold", 1e5));
  in.max_live_parameters =
      static_cast<int64_t>(size_value(f, command, "--max-live-parameters", 1e9));
  ZT_REQUIRE(in.max_live_parameters >= 1, "{}: --max-live-parameters must be positive", command);
  in.make_vocab_divisible_by =
      static_cast<int>(f.integer("--make-vocab-size-divisible-by", 128, 1, 1 << 20));
  finish_plan_input(in, command);
  return in;
}

}  // namespace zt::app
