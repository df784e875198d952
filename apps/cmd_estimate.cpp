// zerotron estimate: per-rank memory by category and communication per step for a model and a
// layout, from the same layout, partition and byte-count code a training run allocates with
// (src/planner). Sizes in bytes; the human-readable form in GB = 10^9 bytes, as the ZeRO paper
// counts. Constant-size buffers (buckets, staging, gathered stage-3 blocks) are not planned yet.
#include <cmath>
#include <nlohmann/json.hpp>

#include "apps/cli_flags.h"
#include "src/planner/memory_plan.h"

namespace zt::app {
namespace {

// "5e8", "32GB", "32e9", "1.5GiB": a byte or element count.
double size_value(const ParsedFlags& f, std::string_view name, double fallback) {
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
  ZT_REQUIRE(used == s.size() && v >= 0 && std::isfinite(v),
             "estimate: {} expects a size, got '{}'", name, f.str(name));
  return v * scale;
}

}  // namespace

int estimate(Args args) {
  const std::vector<FlagSpec> specs = {
      {"--num-layers", "N", "transformer layers"},
      {"--hidden-size", "H", "model width"},
      {"--num-attention-heads", "A", "attention heads"},
      {"--num-parameters", "P", "instead of the shape: e.g. 7.5e9, shaped by the rule below"},
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
      {"--device-memory", "BYTES", "e.g. 32GB: say whether it fits"},
      {"--json", "", "one JSON object instead of the table"},
  };
  auto f = ParsedFlags::parse("estimate", specs, args);
  if (!f) return 0;
  PlanInput in;
  in.model.seq_length = static_cast<int>(f->integer("--seq-length", 1024, 1, 1 << 24));
  in.model.vocab_size = static_cast<int>(f->integer("--vocab-size", 50257, 2, 1 << 30));
  if (f->has("--num-parameters")) {
    ZT_REQUIRE(!f->has("--num-layers") && !f->has("--hidden-size"),
               "estimate: give --num-parameters or the shape, not both");
    // Shape rule: head size 128 and hidden ~ 128 x layers (GPT-3's aspect ratios), so
    // P ~ h³ · 12/128. Among hidden sizes (multiples of 128) near that, take the one whose best
    // layer count gives the parameter count closest to P, embeddings included.
    const double target = size_value(*f, "--num-parameters", 0);
    ZT_REQUIRE(target >= 1e6, "estimate: --num-parameters must be at least 1e6");
    const int h0 = static_cast<int>(std::round(std::cbrt(target * 128.0 / 12.0) / 128.0)) * 128;
    double best = -1;
    for (int h = std::max(128, h0 - 8 * 128); h <= h0 + 8 * 128; h += 128) {
      GptConfig g = in.model;
      g.hidden = h;
      g.heads = h / 128;
      g.num_layers = 1;
      g.padded_vocab_size = g.vocab_size;
      const double per_layer = static_cast<double>(g.num_parameters());
      g.num_layers = 2;
      const double layer = static_cast<double>(g.num_parameters()) - per_layer;
      const double base = per_layer - layer;  // embeddings and the final layernorm
      g.num_layers = std::max(1, static_cast<int>(std::lround((target - base) / layer)));
      const double err = std::abs(base + layer * g.num_layers - target);
      if (best < 0 || err < best) {
        best = err;
        in.model.hidden = g.hidden;
        in.model.heads = g.heads;
        in.model.num_layers = g.num_layers;
      }
    }
  } else {
    ZT_REQUIRE(f->has("--num-layers") && f->has("--hidden-size") && f->has("--num-attention-heads"),
               "estimate: give --num-layers, --hidden-size and --num-attention-heads, or "
               "--num-parameters");
    in.model.num_layers = static_cast<int>(f->integer("--num-layers", 0, 1, 1 << 20));
    in.model.hidden = static_cast<int>(f->integer("--hidden-size", 0, 1, 1 << 24));
    in.model.heads = static_cast<int>(f->integer("--num-attention-heads", 0, 1, 1 << 16));
  }
  in.tp = static_cast<int>(f->integer("--tensor-model-parallel-size", 1, 1, 1 << 16));
  ZT_REQUIRE(!(f->has("--data-parallel-size") && f->has("--world-size")),
             "estimate: give --data-parallel-size or --world-size, not both");
  if (f->has("--world-size")) {
    const int64_t w = f->integer("--world-size", 1, 1, 1 << 24);
    ZT_REQUIRE(w % in.tp == 0, "estimate: --world-size {} is not divisible by tp {}", w, in.tp);
    in.dp = static_cast<int>(w / in.tp);
  } else {
    in.dp = static_cast<int>(f->integer("--data-parallel-size", 1, 1, 1 << 24));
  }
  in.zero_stage = static_cast<int>(f->integer("--zero-stage", 0, 0, 3));
  ZT_REQUIRE(!(f->has("--fp16") && f->has("--bf16")), "estimate: --fp16 and --bf16 are exclusive");
  in.working = f->has("--bf16") ? DType::BF16 : f->has("--fp16") ? DType::F16 : DType::F32;
  in.micro_batch = static_cast<int>(f->integer("--micro-batch-size", 1, 1, 1 << 20));
  in.accumulation = static_cast<int>(f->integer("--gradient-accumulation", 1, 1, 1 << 20));
  in.checkpoint_activations = f->has("--checkpoint-activations");
  in.checkpoint_num_layers = static_cast<int>(f->integer("--checkpoint-num-layers", 1, 1, 1 << 20));
  in.partition_activations = f->has("--partition-activations");
  in.cpu_checkpointing = f->has("--cpu-checkpointing");
  in.reduce_bucket_elems = static_cast<int64_t>(size_value(*f, "--reduce-bucket-size", 5e8));
  in.param_persistence_threshold =
      static_cast<int64_t>(size_value(*f, "--param-persistence-threshold", 1e5));
  const int divisible =
      static_cast<int>(f->integer("--make-vocab-size-divisible-by", 128, 1, 1 << 20));
  in.model.padded_vocab_size = padded_vocab_size(in.model.vocab_size, divisible, in.tp);
  validate_tensor_parallel(in.model, in.tp);
  ZT_REQUIRE(in.model.hidden % in.model.heads == 0,
             "estimate: --num-attention-heads ({}) must divide --hidden-size ({})", in.model.heads,
             in.model.hidden);
  const MemoryPlan p = plan_memory(in);
  const double device = size_value(*f, "--device-memory", 0);
  const size_t total = p.model_states() + p.activations + p.checkpoints;
  const bool fits = device <= 0 || static_cast<double>(total) <= device;
  if (f->has("--json")) {
    nlohmann::json j = {{"num_parameters", p.num_parameters},
                        {"model",
                         {{"num_layers", in.model.num_layers},
                          {"hidden_size", in.model.hidden},
                          {"num_attention_heads", in.model.heads}}},
                        {"rank_parameters", p.rank_parameters},
                        {"params_bytes", p.params},
                        {"grads_bytes", p.grads},
                        {"optimizer_bytes", p.optimizer},
                        {"model_states_bytes", p.model_states()},
                        {"activation_bytes", p.activations},
                        {"checkpoint_bytes", p.checkpoints},
                        {"host_checkpoint_bytes", p.host_checkpoints},
                        {"buffers_bytes", nullptr},  // not planned yet
                        {"total_bytes", total},
                        {"fits", fits},
                        {"comm_bytes_per_step", {{"dp", p.comm_dp}, {"tp", p.comm_tp}}}};
    fmt::print("{}\n", j.dump());
    return 0;
  }
  auto gb = [](double b) { return b / 1e9; };
  fmt::print(
      "model: {} parameters ({} on each tensor-parallel rank), tp {} x dp {}, ZeRO stage {}\n",
      p.num_parameters, p.rank_parameters, in.tp, in.dp, in.zero_stage);
  fmt::print("per rank (GB = 1e9 bytes):\n");
  fmt::print("  params          {:10.3f}\n  grads           {:10.3f}\n  optimizer       {:10.3f}\n",
             gb(p.params), gb(p.grads), gb(p.optimizer));
  fmt::print("  model states    {:10.3f}\n  activations     {:10.3f}\n  checkpoints     {:10.3f}\n",
             gb(p.model_states()), gb(p.activations), gb(p.checkpoints));
  fmt::print("  host ckpts      {:10.3f}\n  total           {:10.3f} (buffers not included)\n",
             gb(p.host_checkpoints), gb(total));
  if (device > 0) fmt::print("  fits in {:.1f} GB: {}\n", gb(device), fits ? "yes" : "no");
  fmt::print("communication per step: dp {:.3f} GB, tp {:.3f} GB\n", gb(p.comm_dp), gb(p.comm_tp));
  return 0;
}

}  // namespace zt::app
