#include "src/train/options.h"

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <variant>
#include <vector>

#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/core/json_input.h"
#include "src/data/gpt_dataset.h"
#include "src/pipeline/schedule.h"

namespace zt {
namespace {

using O = TrainOptions;
using Field = std::variant<int O::*, int64_t O::*, double O::*, bool O::*, std::string O::*>;

// Size: a non-negative byte count, plain or with a unit (parse_size).
enum class Check : uint8_t { Any, Positive, NonNegative, Probability, Choice, Size };

struct Decl {
  std::string_view flag;  // without the leading "--"
  std::string_view json;  // key in the JSON config (dots for nesting)
  Field field;
  Check check;
  std::string_view help;
  std::string_view choices = {};  // "a|b|c" for Check::Choice
  // Takes every following word up to the next flag (Megatron's nargs='*'), joined by spaces.
  bool words = false;
};

// The one declaration of every training option.
const std::vector<Decl>& decls() {
  static const std::vector<Decl> d = {
      {"num-layers", "num_layers", &O::num_layers, Check::Positive, "transformer layers"},
      {"hidden-size", "hidden_size", &O::hidden_size, Check::Positive, "model width"},
      {"num-attention-heads", "num_attention_heads", &O::num_attention_heads, Check::Positive,
       "attention heads (must divide --hidden-size)"},
      {"seq-length", "seq_length", &O::seq_length, Check::Positive, "tokens per sample"},
      {"vocab-size", "vocab_size", &O::vocab_size, Check::Positive,
       "vocabulary size for --mock-data (--data-path takes it from --vocab-file)"},
      {"make-vocab-size-divisible-by", "make_vocab_size_divisible_by",
       &O::make_vocab_size_divisible_by, Check::Positive,
       "pad the vocabulary to a multiple of this (times the tensor-parallel size)"},
      {"attention-dropout", "attention_dropout", &O::attention_dropout, Check::Probability,
       "dropout on attention probabilities"},
      {"hidden-dropout", "hidden_dropout", &O::hidden_dropout, Check::Probability,
       "dropout on the residual branches"},
      {"micro-batch-size", "train_micro_batch_size_per_gpu", &O::micro_batch_size, Check::Positive,
       "sequences per rank per forward/backward"},
      {"global-batch-size", "train_batch_size", &O::global_batch_size, Check::NonNegative,
       "sequences per optimizer step over all ranks (0: micro batch x data-parallel size)"},
      {"train-iters", "train_iters", &O::train_iters, Check::Positive, "optimizer steps"},
      {"lr", "lr", &O::lr, Check::NonNegative, "peak learning rate"},
      {"min-lr", "min_lr", &O::min_lr, Check::NonNegative, "learning rate at the end of decay"},
      {"lr-warmup-iters", "lr_warmup_iters", &O::lr_warmup_iters, Check::NonNegative,
       "linear warm-up steps"},
      {"lr-decay-iters", "lr_decay_iters", &O::lr_decay_iters, Check::NonNegative,
       "steps over which the learning rate decays (0: --train-iters)"},
      {"lr-decay-style", "lr_decay_style", &O::lr_decay_style, Check::Choice, "learning-rate decay",
       "constant|linear|cosine"},
      {"weight-decay", "weight_decay", &O::weight_decay, Check::NonNegative,
       "decoupled weight decay (not applied to biases and layernorms)"},
      {"clip-grad", "gradient_clipping", &O::clip_grad, Check::NonNegative,
       "global gradient L2-norm bound (0: off)"},
      {"adam-beta1", "adam_beta1", &O::adam_beta1, Check::Probability, "Adam beta1"},
      {"adam-beta2", "adam_beta2", &O::adam_beta2, Check::Probability, "Adam beta2"},
      {"adam-eps", "adam_eps", &O::adam_eps, Check::Positive, "Adam epsilon"},
      {"seed", "seed", &O::seed, Check::NonNegative, "seed for initialisation, data and dropout"},
      {"fp16", "fp16.enabled", &O::fp16, Check::Any,
       "fp16 parameters and gradients, fp32 master weights, loss scaling"},
      {"bf16", "bf16.enabled", &O::bf16, Check::Any,
       "bf16 parameters and gradients, fp32 master weights"},
      {"tf32", "tf32", &O::tf32, Check::Any,
       "fp32 GEMMs on TF32 tensor cores (cuda, sm_80+; --tf32=false for exact fp32)"},
      {"loss-scale", "fp16.loss_scale", &O::loss_scale, Check::NonNegative,
       "fixed loss scale for fp16 (0: dynamic)"},
      {"initial-loss-scale", "fp16.initial_loss_scale", &O::initial_loss_scale, Check::Positive,
       "initial dynamic loss scale"},
      {"loss-scale-window", "fp16.loss_scale_window", &O::loss_scale_window, Check::Positive,
       "clean steps before the dynamic loss scale doubles"},
      {"hysteresis", "fp16.hysteresis", &O::hysteresis, Check::Positive,
       "overflows tolerated before the dynamic loss scale halves"},
      {"min-loss-scale", "fp16.min_loss_scale", &O::min_loss_scale, Check::Positive,
       "lowest dynamic loss scale; an overflow there ends the run"},
      {"max-loss-scale", "fp16.max_loss_scale", &O::max_loss_scale, Check::Positive,
       "highest dynamic loss scale: growth stops there (Megatron and DeepSpeed have no cap; the "
       "default is their initial scale, 2^32)"},
      {"max-consecutive-skips", "fp16.max_consecutive_skips", &O::max_consecutive_skips,
       Check::Positive,
       "end the run after this many steps in a row skipped for overflowing gradients (the "
       "default leaves room for the dynamic scale's descent from 2^32: 64 steps at hysteresis 2)"},
      {"tensor-model-parallel-size", "tensor_model_parallel_size", &O::tensor_model_parallel_size,
       Check::Positive, "ranks one layer is split across (adjacent ranks: keep it inside a node)"},
      {"pipeline-model-parallel-size", "pipeline_model_parallel_size",
       &O::pipeline_model_parallel_size, Check::Positive,
       "pipeline stages: the layers split into this many consecutive stages (the embedding on "
       "the first, the head and loss on the last), run by the 1F1B schedule"},
      {"num-layers-per-virtual-pipeline-stage", "num_layers_per_virtual_pipeline_stage",
       &O::num_layers_per_virtual_pipeline_stage, Check::NonNegative,
       "layers per model chunk: each stage holds several chunks and runs Megatron-LM's "
       "interleaved schedule (0: one chunk per stage)"},
      {"sequence-parallel", "sequence_parallel", &O::sequence_parallel, Check::Any,
       "split the layernorm, dropout and residual activations along the tokens over the "
       "tensor-parallel ranks (Megatron-LM's sequence parallelism; no effect at tp 1)"},
      {"zero-stage", "zero_optimization.stage", &O::zero_stage, Check::NonNegative,
       "ZeRO stage: 0 plain data parallel, 1 optimizer states, 2 + gradients, 3 + parameters "
       "partitioned over the data-parallel group"},
      {"allgather-bucket-size", "zero_optimization.allgather_bucket_size",
       &O::allgather_bucket_size, Check::Positive,
       "elements in flight while all-gathering updated parameters (stages 1-2)"},
      {"contiguous-gradients", "zero_optimization.contiguous_gradients", &O::contiguous_gradients,
       Check::Any, "kept gradients live in one pre-allocated contiguous buffer (always true here)"},
      {"prefetch-bucket-size", "zero_optimization.stage3_prefetch_bucket_size",
       &O::prefetch_bucket_size, Check::Positive,
       "stage 3: largest block (elements) whose gather starts while the previous one computes"},
      {"param-persistence-threshold", "zero_optimization.stage3_param_persistence_threshold",
       &O::param_persistence_threshold, Check::NonNegative,
       "stage 3: blocks this small (elements) stay gathered for the whole step"},
      {"max-live-parameters", "zero_optimization.stage3_max_live_parameters",
       &O::max_live_parameters, Check::Positive,
       "stage 3: bound on gathered parameters (elements) held at once"},
      {"reduce-bucket-size", "zero_optimization.reduce_bucket_size", &O::reduce_bucket_size,
       Check::Positive, "elements per gradient-reduction bucket (constant, not model-sized)"},
      {"overlap-comm", "zero_optimization.overlap_comm", &O::overlap_comm, Check::Any,
       "start each gradient bucket's reduction during backward as soon as it is complete"},
      {"device", "device", &O::device, Check::Choice,
       "backend: cuda (GPU per local rank, NCCL), cpu (OpenBLAS, MPI), or auto: cuda when this "
       "build has the CUDA backend and a GPU is visible, else cpu",
       "auto|cuda|cpu"},
      {"device-memory", "device_memory", &O::device_memory, Check::Size,
       "device memory per rank: bytes, or with a unit (32GiB = 32 x 2^30, 32GB = 32e9); every "
       "byte comes from one region of this size, first fit, with its fragmentation reported; a "
       "layout whose plan does not fit is refused up front (0: allocate as needed)"},
      {"checkpoint-activations", "checkpoint_activations", &O::checkpoint_activations, Check::Any,
       "keep only each span's input; recompute its forward in backward"},
      {"checkpoint-num-layers", "checkpoint_num_layers", &O::checkpoint_num_layers, Check::Positive,
       "layers per checkpointed span"},
      {"partition-activations", "activation_checkpointing.partition_activations",
       &O::partition_activations, Check::Any,
       "ZeRO-R Pa: each tensor-parallel rank keeps 1/tp of every checkpoint"},
      {"cpu-checkpointing", "activation_checkpointing.cpu_checkpointing", &O::cpu_checkpointing,
       Check::Any, "ZeRO-R Pa+cpu: checkpoints live in host memory"},
      {"comm-timeout", "comm_timeout", &O::comm_timeout, Check::Positive,
       "seconds a collective may take before the job is aborted"},
      {"mock-data", "mock_data", &O::mock_data, Check::Any,
       "deterministic synthetic documents from --seed instead of a dataset"},
      {"data-path", "data_path", &O::data_path, Check::Any,
       "indexed dataset prefix (P for P.bin/P.idx), or a blend 'w1 P1 w2 P2 ...' by weight", "",
       true},
      {"split", "split", &O::split, Check::Any,
       "train,valid,test weights over each dataset's documents"},
      {"tokenizer-type", "tokenizer_type", &O::tokenizer_type, Check::Choice,
       "tokenizer of --data-path", "GPT2BPETokenizer"},
      {"vocab-file", "vocab_file", &O::vocab_file, Check::Any,
       "GPT-2 vocab.json (sets the vocabulary size)"},
      {"merge-file", "merge_file", &O::merge_file, Check::Any, "GPT-2 merges.txt"},
      {"eval-interval", "eval_interval", &O::eval_interval, Check::Positive,
       "steps between validation-loss evaluations (and one at the end)"},
      {"eval-iters", "eval_iters", &O::eval_iters, Check::NonNegative,
       "global batches of the validation split per evaluation (0: no evaluation)"},
      {"save", "save", &O::save, Check::Any,
       "directory to write sharded checkpoints to (DIR/iter_NNNNNNN, DIR/latest)"},
      {"save-interval", "save_interval", &O::save_interval, Check::NonNegative,
       "steps between checkpoints (0: only at the end)"},
      {"load", "load", &O::load, Check::Any,
       "resume from DIR/latest (same layout); starts from scratch when DIR has no checkpoint"},
      {"keep-last", "keep_last", &O::keep_last, Check::NonNegative,
       "keep only the newest K checkpoints in --save (0: all)"},
      {"exit-signal-handler", "exit_signal_handler", &O::exit_signal_handler, Check::Any,
       "on SIGTERM, SIGINT or SIGUSR1 every rank finishes its step, saves to --save and exits 0"},
      {"exit-interval", "exit_interval", &O::exit_interval, Check::NonNegative,
       "save and exit 0 after the first iteration divisible by this (0: off)"},
      {"exit-duration-in-mins", "exit_duration_in_mins", &O::exit_duration_in_mins,
       Check::NonNegative,
       "save and exit 0 after the first step ending this many minutes into "
       "training (0: off)"},
      {"log-interval", "log_interval", &O::log_interval, Check::Positive,
       "steps between console lines"},
      {"metrics-file", "metrics_file", &O::metrics_file, Check::Any,
       "write one JSON object per step to this file"},
      {"config", "", &O::config, Check::Any,
       "JSON config (DeepSpeed-style keys) read before the flags"},
  };
  return d;
}

const Decl* find_flag(std::string_view name) {
  for (const auto& d : decls())
    if (d.flag == name) return &d;
  return nullptr;
}

bool is_bool(const Decl& d) {
  return std::holds_alternative<bool O::*>(d.field);
}

double parse_number(const Decl& d, std::string_view text) {
  const std::string s(text);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  ZT_REQUIRE(used == s.size() && !s.empty() && std::isfinite(v), "--{} expects a number, got '{}'",
             d.flag, excerpt(text));
  return v;
}

void check_value(const Decl& d, double v) {
  switch (d.check) {
    case Check::Positive:
      ZT_REQUIRE(v > 0, "--{} must be positive, got {}", d.flag, v);
      break;
    case Check::NonNegative:
      ZT_REQUIRE(v >= 0, "--{} must not be negative, got {}", d.flag, v);
      break;
    case Check::Probability:
      ZT_REQUIRE(v >= 0 && v < 1, "--{} must be in [0, 1), got {}", d.flag, v);
      break;
    default:
      break;
  }
}

void set_from_text(const Decl& d, std::string_view text, O& o) {
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(o.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (d.check == Check::Choice) {
            bool ok = false;
            std::string_view rest = d.choices;
            while (!rest.empty()) {
              const size_t bar = rest.find('|');
              ok |= rest.substr(0, bar) == text;
              rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
            }
            ZT_REQUIRE(ok, "--{} must be one of {}, got '{}'", d.flag, d.choices, excerpt(text));
          }
          o.*member = std::string(text);
        } else if constexpr (std::is_same_v<T, bool>) {
          ZT_REQUIRE(text == "true" || text == "false" || text == "1" || text == "0",
                     "--{} expects true or false, got '{}'", d.flag, excerpt(text));
          o.*member = text == "true" || text == "1";
        } else {
          const double v =
              d.check == Check::Size ? parse_size(text, d.flag) : parse_number(d, text);
          if constexpr (!std::is_same_v<T, double>)
            ZT_REQUIRE(v == std::floor(v) && std::abs(v) < 9.2e18,
                       "--{} expects an integer, got '{}'", d.flag, excerpt(text));
          if constexpr (std::is_same_v<T, int>)
            ZT_REQUIRE(std::abs(v) < 2147483648.0, "--{} is out of range: {}", d.flag,
                       excerpt(text));
          check_value(d, v);
          o.*member = static_cast<T>(v);
        }
      },
      d.field);
}

void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::pair<std::string, nlohmann::json>>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object())
      flatten(*it, key, out);
    else
      out.emplace_back(key, *it);
  }
}

// The JSON value of an option as the text its flag would take, refusing a value of the wrong
// JSON type (a string for a number, 1 for a boolean, an array for a scalar): a config whose
// types are off is more likely a mistake than a request.
std::string json_option_text(const Decl& d, const nlohmann::json& v, std::string_view where) {
  auto wrong = [&](std::string_view want) {
    return InputError(fmt::format("{}: key '{}' must be {}, got {} {}", where, d.json, want,
                                  json_type_name(v), json_excerpt(v)));
  };
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::remove_reference_t<decltype(std::declval<O&>().*member)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (!v.is_boolean()) throw wrong("true or false");
          return v.get<bool>() ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (v.is_string()) return v.get<std::string>();
          if (!d.words || !v.is_array()) throw wrong("a string");
          std::string text;  // "data_path": ["0.7", "a", "0.3", "b"]
          for (const auto& w : v) {
            if (!w.is_string() && !w.is_number()) throw wrong("an array of strings and numbers");
            if (!text.empty()) text += ' ';
            text += w.is_string() ? w.get<std::string>() : w.dump();
          }
          return text;
        } else {
          if (d.check == Check::Size && v.is_string()) return v.get<std::string>();  // "32GiB"
          if (!v.is_number()) throw wrong(std::is_same_v<T, double> ? "a number" : "an integer");
          return v.dump();
        }
      },
      d.field);
}

void read_json_config(const std::string& path, O& o) {
  // A DeepSpeed config is a few kilobytes; a megabyte leaves room and bounds what is read.
  apply_json_config(read_input_file(path, 1 << 20, "--config file"),
                    fmt::format("--config file '{}'", excerpt(path, 200)), o);
}

}  // namespace

void apply_json_config(std::string_view text, std::string_view where, O& o) {
  const nlohmann::json j =
      parse_json_input(text, where, JsonLimits{.max_depth = 8, .max_string = 4096});
  ZT_REQUIRE(j.is_object(), "{} must hold a JSON object, got {}", where, json_type_name(j));
  std::vector<std::pair<std::string, nlohmann::json>> items;
  flatten(j, "", items);
  for (const auto& [key, value] : items) {
    const Decl* d = nullptr;
    for (const auto& cand : decls())
      if (!cand.json.empty() && cand.json == key) d = &cand;
    ZT_REQUIRE(d != nullptr, "unknown key '{}' in {}", excerpt(key, 80), where);
    set_from_text(*d, json_option_text(*d, value, where), o);
  }
}

double parse_size(std::string_view text, std::string_view flag) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
      {"B", 1.0}};
  std::string number(text);
  double scale = 1;
  for (const auto& [unit, mult] : kUnits)
    if (text.size() > unit.size() && text.ends_with(unit)) {
      number.resize(text.size() - unit.size());
      scale = mult;
      break;
    }
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const double bytes = v * scale;
  ZT_REQUIRE(used == number.size() && !number.empty() &&
                 std::isdigit(static_cast<unsigned char>(number[0])) && std::isfinite(bytes) &&
                 bytes >= 0 && bytes < 1e18,
             "--{} expects a size in bytes, plain or with a unit (32GiB, 32GB, 512MiB), got '{}'",
             flag, excerpt(text));
  return bytes;
}

std::string train_options_help() {
  std::string s = "usage: zerotron train [flags]\n\nflags (JSON key in brackets):\n";
  for (const auto& d : decls()) {
    std::string name = "--" + std::string(d.flag);
    if (!is_bool(d)) name += d.words ? " X..." : " X";
    s += fmt::format("  {:<34} {}", name, d.help);
    if (!d.choices.empty()) s += fmt::format(" ({})", d.choices);
    if (!d.json.empty()) s += fmt::format(" [{}]", d.json);
    s += "\n";
  }
  return s;
}

namespace {

// The parser behind parse_train_options and parse_train_flags. Without `flags`, a flag not in
// the table is an error; with it, the flag and its values go to flags->rest.
bool parse_into(std::span<const std::string_view> args, O& o, TrainFlags* flags) {
  o = O{};
  // The config file is read first so flags override it wherever it appears on the line.
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") return false;
    if (args[i] == "--config" && i + 1 < args.size()) read_json_config(std::string(args[i + 1]), o);
    if (args[i].starts_with("--config=")) read_json_config(std::string(args[i].substr(9)), o);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    ZT_REQUIRE(a.starts_with("--") && a.size() > 2, "unexpected argument '{}'", excerpt(a));
    std::string_view name = a.substr(2), value;
    bool has_value = false;
    if (const size_t eq = name.find('='); eq != std::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const Decl* d = find_flag(name);
    if (d == nullptr && flags != nullptr) {  // the caller's flag, with its values
      flags->rest.push_back(a);
      while (i + 1 < args.size() && !args[i + 1].starts_with("--"))
        flags->rest.push_back(args[++i]);
      continue;
    }
    ZT_REQUIRE(d != nullptr, "unknown flag --{}, run 'zerotron train --help'", excerpt(name));
    if (flags != nullptr) flags->given.emplace_back(name);
    if (is_bool(*d) && !has_value) {
      o.*std::get<bool O::*>(d->field) = true;
      continue;
    }
    if (d->words && !has_value) {
      std::string joined;
      while (i + 1 < args.size() && !args[i + 1].starts_with("--")) {
        if (!joined.empty()) joined += ' ';
        joined += args[++i];
      }
      ZT_REQUIRE(!joined.empty(), "--{} needs a value", name);
      set_from_text(*d, joined, o);
      continue;
    }
    if (!has_value) {
      ZT_REQUIRE(i + 1 < args.size(), "--{} needs a value", name);
      value = args[++i];
    }
    set_from_text(*d, value, o);
  }
  return true;
}

}  // namespace

bool parse_train_options(std::span<const std::string_view> args, O& o) {
  return parse_into(args, o, nullptr);
}

TrainFlags parse_train_flags(std::span<const std::string_view> args) {
  TrainFlags f;
  f.help = !parse_into(args, f.options, &f);
  return f;
}

bool TrainFlags::has(std::string_view flag) const {
  for (const auto& g : given)
    if (g == flag) return true;
  return false;
}

int data_parallel_size(const O& o, int world) {
  const int mp = o.tensor_model_parallel_size * o.pipeline_model_parallel_size;
  ZT_REQUIRE(world % mp == 0,
             "world size {} is not divisible by --tensor-model-parallel-size {} x "
             "--pipeline-model-parallel-size {}",
             world, o.tensor_model_parallel_size, o.pipeline_model_parallel_size);
  return world / mp;
}

int model_chunks(const O& o) {
  const int per_stage = o.num_layers / o.pipeline_model_parallel_size;
  const int k = o.num_layers_per_virtual_pipeline_stage;
  return k == 0 ? 1 : per_stage / k;
}

void validate_pipeline_options(const O& o, int micro_batches) {
  const int P = o.pipeline_model_parallel_size, k = o.num_layers_per_virtual_pipeline_stage;
  if (P == 1) {
    ZT_REQUIRE(k == 0,
               "--num-layers-per-virtual-pipeline-stage needs "
               "--pipeline-model-parallel-size > 1");
    return;
  }
  ZT_REQUIRE(o.num_layers % P == 0,
             "--num-layers ({}) must be a multiple of --pipeline-model-parallel-size ({})",
             o.num_layers, P);
  ZT_REQUIRE(k == 0 || (o.num_layers / P) % k == 0,
             "--num-layers-per-virtual-pipeline-stage ({}) must divide the {} layers of a stage", k,
             o.num_layers / P);
  // Stages 2 and 3 keep only a shard of the gradient and reduce-scatter every micro-batch's
  // gradients as backward makes them: a pipeline runs at least P micro-batches per step, so
  // their data-parallel traffic would be that many times stage 1's (README: ZeRO with pipeline
  // parallelism), and the tied embedding's two copies could not be summed before it.
  ZT_REQUIRE(o.zero_stage <= 1,
             "--zero-stage {} with --pipeline-model-parallel-size {} is not supported: stages 2 "
             "and 3 reduce gradients every micro-batch ({} per step here), use --zero-stage 1",
             o.zero_stage, P, micro_batches);
  pipeline::validate({P, micro_batches, model_chunks(o)});
}

void validate_train_options(const O& o, int dp) {
  ZT_REQUIRE(o.hidden_size % o.num_attention_heads == 0,
             "--num-attention-heads ({}) must divide --hidden-size ({})", o.num_attention_heads,
             o.hidden_size);
  ZT_REQUIRE(!(o.fp16 && o.bf16), "--fp16 and --bf16 are exclusive");
  ZT_REQUIRE(o.mock_data || !o.data_path.empty(), "no data: pass --data-path or --mock-data");
  ZT_REQUIRE(!(o.mock_data && !o.data_path.empty()), "--mock-data and --data-path are exclusive");
  if (o.mock_data) {
    ZT_REQUIRE(o.vocab_size > 0, "--mock-data needs --vocab-size");
    ZT_REQUIRE(o.vocab_size >= 2, "--vocab-size must be at least 2");
  } else {
    // The files themselves are opened and checked by open_train_data (src/train/train_data.h).
    ZT_REQUIRE(!o.vocab_file.empty() && !o.merge_file.empty(),
               "--data-path needs --vocab-file and --merge-file");
    data::split_documents(o.split, 1);  // the form only; throws on a malformed --split
  }
  const int64_t per_step = int64_t{o.micro_batch_size} * dp;
  const int64_t global = o.global_batch_size == 0 ? per_step : o.global_batch_size;
  ZT_REQUIRE(global % per_step == 0,
             "--global-batch-size ({}) must be a multiple of --micro-batch-size ({}) x "
             "data-parallel size ({})",
             global, o.micro_batch_size, dp);
  ZT_REQUIRE(!o.partition_activations || o.checkpoint_activations,
             "--partition-activations needs --checkpoint-activations");
  ZT_REQUIRE(!o.cpu_checkpointing || o.partition_activations,
             "--cpu-checkpointing needs --partition-activations (DeepSpeed's rule)");
  ZT_REQUIRE(o.zero_stage <= 3, "--zero-stage must be 0, 1, 2 or 3, got {}", o.zero_stage);
  validate_pipeline_options(o, static_cast<int>(global / per_step));
  ZT_REQUIRE(o.contiguous_gradients,
             "--contiguous-gradients false is not supported: zerotron always keeps gradients in "
             "one contiguous pre-allocated buffer");
  ZT_REQUIRE(o.min_lr <= o.lr, "--min-lr ({}) must not exceed --lr ({})", o.min_lr, o.lr);
  const int decay = o.lr_decay_iters == 0 ? o.train_iters : o.lr_decay_iters;
  ZT_REQUIRE(o.lr_warmup_iters <= decay,
             "--lr-warmup-iters ({}) must not exceed the decay iterations ({})", o.lr_warmup_iters,
             decay);
  ZT_REQUIRE(o.min_loss_scale <= o.initial_loss_scale,
             "--min-loss-scale must not exceed --initial-loss-scale");
  // A loss scale below fp16's smallest subnormal (2^-24) flushes every gradient to zero. 2^32 is
  // Megatron's initial dynamic scale, the largest any run starts from; above it every gradient
  // larger than 65504 / 2^32 = 1.5e-5 overflows fp16.
  constexpr double kMinScale = 0x1p-24, kMaxScale = 0x1p32;
  struct Scale {
    const char* flag;
    double value;
    bool zero_is_dynamic;
  };
  for (const Scale& s : {Scale{"--loss-scale", o.loss_scale, true},
                         Scale{"--initial-loss-scale", o.initial_loss_scale, false},
                         Scale{"--min-loss-scale", o.min_loss_scale, false},
                         Scale{"--max-loss-scale", o.max_loss_scale, false}})
    ZT_REQUIRE(
        (s.zero_is_dynamic && s.value == 0) || (s.value >= kMinScale && s.value <= kMaxScale),
        "{} must be in [2^-24, 2^32] (fp16's smallest subnormal to Megatron's initial "
        "scale){}, got {:g}",
        s.flag, s.zero_is_dynamic ? ", or 0 for a dynamic scale" : "", s.value);
  ZT_REQUIRE(o.initial_loss_scale <= o.max_loss_scale,
             "--initial-loss-scale ({:g}) must not exceed --max-loss-scale ({:g})",
             o.initial_loss_scale, o.max_loss_scale);
}

}  // namespace zt
