#include "src/checkpoint/meta.h"

#include <cmath>

#include "src/core/error.h"
#include "src/core/json_input.h"

#ifndef ZT_VERSION
#define ZT_VERSION "unknown"
#endif

namespace zt {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 24;  // far beyond any model, small enough to multiply
// Tighter for the two sizes a parameter count multiplies: with them, GptConfig::num_parameters()
// (at most about 2^58) and every tensor's element count stay far inside int64, and the layout,
// a few tensors per layer, stays small. The largest published models have 12,288 hidden units
// and 128 layers.
constexpr int64_t kMaxHidden = int64_t{1} << 20;
constexpr int64_t kMaxLayers = int64_t{1} << 14;
// Experts of a MoE layer: another factor of the parameter count (the largest models have 256).
constexpr int64_t kMaxExperts = int64_t{1} << 12;

double prob_field(const nlohmann::json& j, const std::string& key, const std::string& where) {
  ZT_REQUIRE(j.is_object() && j.contains(key) && j[key].is_number(),
             "'{}': field '{}' must be a number", where, key);
  const double v = j[key].get<double>();
  ZT_REQUIRE(v >= 0 && v < 1, "'{}': field '{}' is {}, outside [0, 1)", where, key, v);
  return v;
}

}  // namespace

nlohmann::json parse_meta_json(std::string_view text, const std::string& where) {
  return parse_json_input(text, fmt::format("'{}'", where),
                          JsonLimits{.max_depth = 8, .max_string = 4096});
}

const char* zerotron_version() {
  return ZT_VERSION;
}

int64_t int_field(const nlohmann::json& j, const std::string& key, int64_t lo, int64_t hi,
                  const std::string& where) {
  ZT_REQUIRE(j.is_object() && j.contains(key) && j[key].is_number_integer(),
             "'{}': field '{}' must be an integer", where, key);
  const auto v = j[key].get<int64_t>();
  ZT_REQUIRE(v >= lo && v <= hi, "'{}': field '{}' is {}, outside [{}, {}]", where, key, v, lo, hi);
  return v;
}

nlohmann::json model_to_json(const GptConfig& c) {
  nlohmann::json j = {{"num_layers", c.num_layers},
                      {"hidden_size", c.hidden},
                      {"num_attention_heads", c.heads},
                      {"seq_length", c.seq_length},
                      {"vocab_size", c.vocab_size},
                      {"padded_vocab_size", c.padded_vocab_size},
                      {"attention_dropout", c.attention_dropout},
                      {"hidden_dropout", c.hidden_dropout}};
  // The architecture choices, each only where it is not GPT-2's (so a GPT-2 meta is unchanged
  // and a meta without them reads as GPT-2).
  const GptConfig gpt2;
  if (c.rope()) {
    j["position_embedding_type"] = "rope";
    j["rotary_base"] = c.rotary_base;
    const RopeScaling& r = c.rope_scaling;
    if (r.type != RopeScaling::Type::None)
      j["rope_scaling"] = {{"type", rope_scaling_name(r.type)},
                           {"factor", r.factor},
                           {"low_freq_factor", r.low_freq_factor},
                           {"high_freq_factor", r.high_freq_factor},
                           {"original_max_positions", r.original_max_positions}};
  }
  if (c.rmsnorm()) j["normalization"] = "RMSNorm";
  if (c.norm_epsilon != gpt2.norm_epsilon) j["norm_epsilon"] = c.norm_epsilon;
  if (c.swiglu) j["swiglu"] = true;
  if (c.ffn_hidden() != 4 * c.hidden) j["ffn_hidden_size"] = c.ffn_hidden();
  if (c.kv_heads() != c.heads) j["num_query_groups"] = c.kv_heads();
  if (c.untie_embeddings) j["untie_embeddings_and_output_weights"] = true;
  if (!c.add_bias_linear) j["add_bias_linear"] = false;
  if (c.add_qkv_bias) j["add_qkv_bias"] = true;
  if (c.max_position_embeddings > 0) j["max_position_embeddings"] = c.max_position_embeddings;
  if (c.init_method_std != gpt2.init_method_std) j["init_method_std"] = c.init_method_std;
  // A mixture of experts' architecture (its training settings, the load-balancing coefficient
  // and the capacity, are the run's flags; the coefficient is recorded where not 0 for an export
  // to write back as Mixtral's router_aux_loss_coef).
  if (c.moe()) {
    j["moe"] = {{"num_experts", c.num_experts},
                {"router_topk", c.moe_topk},
                {"ffn_hidden_size", c.moe_ffn_hidden()},
                {"layer_freq", c.moe_layer_freq},
                {"score_function", c.moe_sigmoid ? "sigmoid" : "softmax"},
                {"renormalize", c.moe_renormalize},
                {"shared_ffn_hidden_size", c.moe_shared_ffn},
                {"shared_gate", c.moe_shared_gate}};
    if (c.moe_aux_loss_coeff != 0) j["moe"]["aux_loss_coeff"] = c.moe_aux_loss_coeff;
  }
  return j;
}

namespace {

// The architecture keys of model_to_json, GPT-2's values where absent.
void architecture_from_json(const nlohmann::json& j, GptConfig& c, const std::string& where) {
  auto str = [&](const char* key, const char* def) {
    if (!j.contains(key)) return std::string(def);
    ZT_REQUIRE(j[key].is_string(), "'{}': field '{}' must be a string", where, key);
    return j[key].get<std::string>();
  };
  auto num = [&](const char* key, double def) {
    if (!j.contains(key)) return def;
    ZT_REQUIRE(j[key].is_number() && j[key].get<double>() > 0,
               "'{}': field '{}' must be a positive number", where, key);
    return j[key].get<double>();
  };
  auto flag = [&](const char* key, bool def) {
    if (!j.contains(key)) return def;
    ZT_REQUIRE(j[key].is_boolean(), "'{}': field '{}' must be true or false", where, key);
    return j[key].get<bool>();
  };
  auto count = [&](const char* key) {
    return j.contains(key) ? static_cast<int>(int_field(j, key, 1, kMaxDim, where)) : 0;
  };
  const std::string pos = str("position_embedding_type", "learned_absolute");
  ZT_REQUIRE(pos == "rope" || pos == "learned_absolute",
             "'{}': position_embedding_type '{}' is not rope or learned_absolute", where, pos);
  c.position_embedding =
      pos == "rope" ? PositionEmbedding::Rope : PositionEmbedding::LearnedAbsolute;
  c.rotary_base = static_cast<float>(num("rotary_base", 10000.0));
  if (j.contains("rope_scaling")) {
    const nlohmann::json& r = j["rope_scaling"];
    ZT_REQUIRE(r.is_object() && r.contains("type") && r["type"].is_string(),
               "'{}': rope_scaling must be an object with a type", where);
    const std::string type = r["type"].get<std::string>();
    c.rope_scaling.type = rope_scaling_type(type);
    ZT_REQUIRE(c.rope_scaling.type != RopeScaling::Type::None,
               "'{}': rope_scaling type '{}' is not linear or llama3", where, type);
    auto positive = [&](const char* key) {
      ZT_REQUIRE(r.contains(key) && r[key].is_number() && r[key].get<double>() > 0,
                 "'{}': rope_scaling.{} must be a positive number", where, key);
      return r[key].get<double>();
    };
    c.rope_scaling.factor = positive("factor");
    c.rope_scaling.low_freq_factor = positive("low_freq_factor");
    c.rope_scaling.high_freq_factor = positive("high_freq_factor");
    c.rope_scaling.original_max_positions =
        static_cast<int>(int_field(r, "original_max_positions", 1, kMaxDim, where));
  }
  const std::string norm = str("normalization", "LayerNorm");
  ZT_REQUIRE(norm == "RMSNorm" || norm == "LayerNorm",
             "'{}': normalization '{}' is not LayerNorm or RMSNorm", where, norm);
  c.normalization = norm == "RMSNorm" ? Normalization::RMSNorm : Normalization::LayerNorm;
  c.norm_epsilon = static_cast<float>(num("norm_epsilon", 1e-5));
  c.swiglu = flag("swiglu", false);
  c.ffn_hidden_size = count("ffn_hidden_size");
  c.num_query_groups = count("num_query_groups");
  c.untie_embeddings = flag("untie_embeddings_and_output_weights", false);
  c.add_bias_linear = flag("add_bias_linear", true);
  c.add_qkv_bias = flag("add_qkv_bias", false);
  c.max_position_embeddings = count("max_position_embeddings");
  c.init_method_std = static_cast<float>(num("init_method_std", 0.02));
  if (!j.contains("moe")) return;
  const nlohmann::json& m = j["moe"];
  ZT_REQUIRE(m.is_object(), "'{}': field 'moe' must be an object", where);
  const std::string moe_where = where + " (moe)";
  c.num_experts = static_cast<int>(int_field(m, "num_experts", 1, kMaxExperts, moe_where));
  c.moe_topk = static_cast<int>(int_field(m, "router_topk", 1, c.num_experts, moe_where));
  c.moe_ffn_hidden_size = static_cast<int>(int_field(m, "ffn_hidden_size", 1, kMaxDim, moe_where));
  c.moe_layer_freq = static_cast<int>(int_field(m, "layer_freq", 1, kMaxLayers, moe_where));
  ZT_REQUIRE(m.contains("score_function") && m["score_function"].is_string() &&
                 (m["score_function"] == "softmax" || m["score_function"] == "sigmoid"),
             "'{}': moe.score_function must be softmax or sigmoid", where);
  c.moe_sigmoid = m["score_function"] == "sigmoid";
  ZT_REQUIRE(m.contains("renormalize") && m["renormalize"].is_boolean(),
             "'{}': moe.renormalize must be true or false", where);
  c.moe_renormalize = m["renormalize"].get<bool>();
  c.moe_shared_ffn =
      static_cast<int>(int_field(m, "shared_ffn_hidden_size", 0, kMaxDim, moe_where));
  ZT_REQUIRE(m.contains("shared_gate") && m["shared_gate"].is_boolean(),
             "'{}': moe.shared_gate must be true or false", where);
  c.moe_shared_gate = m["shared_gate"].get<bool>();
  if (m.contains("aux_loss_coeff")) {
    const nlohmann::json& a = m["aux_loss_coeff"];
    ZT_REQUIRE(a.is_number() && std::isfinite(a.get<double>()) && a.get<double>() >= 0,
               "'{}': moe.aux_loss_coeff must be a non-negative number", where);
    c.moe_aux_loss_coeff = static_cast<float>(a.get<double>());
  }
}

}  // namespace

GptConfig model_from_json(const nlohmann::json& j, const std::string& where) {
  GptConfig c;
  auto dim = [&](const char* key, int64_t hi = kMaxDim) {
    return static_cast<int>(int_field(j, key, 1, hi, where));
  };
  c.num_layers = dim("num_layers", kMaxLayers);
  c.hidden = dim("hidden_size", kMaxHidden);
  c.heads = dim("num_attention_heads");
  c.seq_length = dim("seq_length");
  c.vocab_size = dim("vocab_size");
  c.padded_vocab_size = dim("padded_vocab_size");
  c.attention_dropout = static_cast<float>(prob_field(j, "attention_dropout", where));
  c.hidden_dropout = static_cast<float>(prob_field(j, "hidden_dropout", where));
  ZT_REQUIRE(c.hidden % c.heads == 0 && c.padded_vocab_size >= c.vocab_size,
             "'{}': the model is inconsistent (heads must divide hidden_size, padded_vocab_size "
             "must not be below vocab_size)",
             where);
  architecture_from_json(j, c, where);
  try {
    validate_architecture(c);
  } catch (const InputError& e) {
    throw InputError(fmt::format("'{}': {}", where, e.what()));
  }
  return c;
}

CheckpointLayout read_layout(const nlohmann::json& meta, const std::string& where) {
  const auto format = meta.is_object() ? meta.find("format") : meta.end();
  ZT_REQUIRE(
      format != meta.end() && *format == "zerotron-checkpoint-3",
      "'{}' is not a zerotron-checkpoint-3 meta.json (checkpoints of formats 1 and 2 are not read: "
      "their ZeRO partition cut units differently)",
      where);
  CheckpointLayout s;
  ZT_REQUIRE(meta.contains("model"), "'{}' has no model", where);
  s.model = model_from_json(meta["model"], where);
  ZT_REQUIRE(meta.contains("layout") && meta["layout"].is_object(), "'{}' has no layout", where);
  const auto& lay = meta["layout"];
  s.tp = static_cast<int>(int_field(lay, "tensor_model_parallel_size", 1, 4096, where));
  s.dp = static_cast<int>(int_field(lay, "data_parallel_size", 1, 1 << 20, where));
  s.stage = static_cast<int>(int_field(lay, "zero_stage", 0, 3, where));
  auto optional_size = [&](const char* key) {
    return lay.contains(key) ? static_cast<int>(int_field(lay, key, 1, kMaxLayers, where)) : 1;
  };
  s.pp = optional_size("pipeline_model_parallel_size");
  s.chunks = optional_size("virtual_pipeline_model_parallel_size");
  auto optional_layers = [&](const char* key) {
    return lay.contains(key) ? static_cast<int>(int_field(lay, key, 0, kMaxLayers, where)) : 0;
  };
  s.first_stage_layers = optional_layers("decoder_first_pipeline_num_layers");
  s.last_stage_layers = optional_layers("decoder_last_pipeline_num_layers");
  const std::string why = split_problem(s.split());
  ZT_REQUIRE(why.empty(), "'{}': {}", where, why);
  if (lay.contains("expert_model_parallel_size")) {
    s.ep = static_cast<int>(int_field(lay, "expert_model_parallel_size", 1, kMaxExperts, where));
    ZT_REQUIRE(s.model.num_experts % s.ep == 0 && s.dp % s.ep == 0 && (s.ep == 1 || s.model.moe()),
               "'{}': expert_model_parallel_size {} does not divide the model's experts ({}) and "
               "data_parallel_size {}",
               where, s.ep, s.model.num_experts, s.dp);
  }
  s.iteration = int_field(meta, "iteration", 0, int64_t{1} << 40, where);
  s.partition_unit = int_field(meta, "partition_unit_elems", 1, int64_t{1} << 40, where);
  return s;
}

data::SampleSkips skipped_samples(const nlohmann::json& meta, const std::string& where) {
  if (!meta.contains("skipped_train_samples")) return {};
  const auto& list = meta["skipped_train_samples"];
  ZT_REQUIRE(list.is_array() && list.size() <= data::SampleSkips::kMaxRanges,
             "'{}': skipped_train_samples must be a list of at most {} [begin, end] pairs", where,
             data::SampleSkips::kMaxRanges);
  std::vector<data::SampleRange> ranges;
  for (const auto& pair : list) {
    ZT_REQUIRE(pair.is_array() && pair.size() == 2 && pair[0].is_number_integer() &&
                   pair[1].is_number_integer(),
               "'{}': skipped_train_samples holds {}, not a [begin, end] pair of integers", where,
               json_excerpt(pair));
    ranges.push_back({pair[0].get<int64_t>(), pair[1].get<int64_t>()});
  }
  return data::SampleSkips(std::move(ranges), "'" + where + "'");
}

std::string meta_json(const MetaRecord& r) {
  const CheckpointLayout& l = r.layout;
  nlohmann::json meta;
  meta["format"] = "zerotron-checkpoint-3";
  meta["zerotron_version"] = zerotron_version();
  meta["iteration"] = l.iteration;
  meta["model"] = model_to_json(l.model);
  meta["layout"] = {{"tensor_model_parallel_size", l.tp},
                    {"pipeline_model_parallel_size", l.pp},
                    {"virtual_pipeline_model_parallel_size", l.chunks},
                    {"data_parallel_size", l.dp},
                    {"zero_stage", l.stage},
                    {"precision", std::string(dtype_name(r.precision))}};
  if (l.first_stage_layers > 0)
    meta["layout"]["decoder_first_pipeline_num_layers"] = l.first_stage_layers;
  if (l.last_stage_layers > 0)
    meta["layout"]["decoder_last_pipeline_num_layers"] = l.last_stage_layers;
  if (l.ep > 1) meta["layout"]["expert_model_parallel_size"] = l.ep;
  meta["adam_step"] = r.adam_step;
  meta["partition_unit_elems"] = l.partition_unit;
  const TrainingRecord none;
  const TrainingRecord& t = r.training ? *r.training : none;
  meta["consumed_train_samples"] = t.consumed_train_samples;
  meta["consumed_valid_samples"] = t.consumed_valid_samples;
  if (r.training) {
    meta["loss_scaler"] = {{"scale", t.scaler.scale},
                           {"growth_tracker", t.scaler.growth_tracker},
                           {"hysteresis_left", t.scaler.hysteresis_left},
                           {"consecutive_skips", t.scaler.consecutive_skips}};
    meta["seed"] = t.seed;
    if (t.lr_steps != l.iteration) meta["lr_schedule_steps"] = t.lr_steps;
    if (!t.skipped_train_samples.empty()) {
      nlohmann::json ranges = nlohmann::json::array();
      for (const data::SampleRange& r : t.skipped_train_samples.ranges())
        ranges.push_back({r.begin, r.end});
      meta["skipped_train_samples"] = ranges;
    }
    // What the numbers depend on besides the states: a resumed run is told what it changed.
    meta["settings"] = t.settings;
  }
  meta["shards"] = r.shards;
  if (r.token_ids.is_object() && !r.token_ids.empty()) meta["token_ids"] = r.token_ids;
  return meta.dump(2);
}

std::vector<std::string> changed_settings(const nlohmann::json& saved, const nlohmann::json& now) {
  std::vector<std::string> lines;
  if (!saved.is_object()) return lines;
  for (auto it = now.begin(); it != now.end(); ++it) {
    if (!saved.contains(it.key())) continue;
    // Recorded for `zerotron evaluate`; a resume under another layout changes them legitimately.
    if (it.key() == "micro-batch-size" || it.key() == "eval-iters") continue;
    const auto& was = saved[it.key()];
    if (was != *it)
      lines.push_back(fmt::format("--{} was {} in the checkpoint, this run uses {}", it.key(),
                                  json_excerpt(was), it->dump()));
  }
  return lines;
}

std::vector<std::string> changed_model_settings(const GptConfig& saved, const GptConfig& now) {
  std::vector<std::string> lines;
  auto note = [&](const char* flag, auto was, auto is) {
    if (was != is)
      lines.push_back(
          fmt::format("--{} was {} in the checkpoint, this run uses {}", flag, was, is));
  };
  note("seq-length", saved.seq_length, now.seq_length);
  note("attention-dropout", saved.attention_dropout, now.attention_dropout);
  note("hidden-dropout", saved.hidden_dropout, now.hidden_dropout);
  note("rotary-base", saved.rotary_base, now.rotary_base);
  note("rope-scaling-type", rope_scaling_name(saved.rope_scaling.type),
       rope_scaling_name(now.rope_scaling.type));
  note("rope-scaling-factor", saved.rope_scaling.factor, now.rope_scaling.factor);
  note("norm-epsilon", saved.norm_epsilon, now.norm_epsilon);
  note("init-method-std", saved.init_method_std, now.init_method_std);
  note("max-position-embeddings", saved.max_position_embeddings, now.max_position_embeddings);
  return lines;
}

}  // namespace zt
