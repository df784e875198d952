#include "src/checkpoint/hf_llama.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "src/checkpoint/hf_mixtral.h"
#include "src/checkpoint/hf_qwen2_moe.h"
#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/core/json_input.h"
#include "src/core/log.h"

namespace zt {
namespace {

// A float as the shortest decimal that reads back to it (1e-06, not 9.99999997e-07), so
// config.json shows the value the user gave.
double shortest(float v) {
  return std::stod(fmt::format("{}", v));
}

double config_number(const nlohmann::json& c, const char* key, double fallback, bool positive,
                     const std::string& where) {
  const auto it = c.find(key);
  if (it == c.end() || it->is_null()) return fallback;
  ZT_REQUIRE(it->is_number() && std::isfinite(it->get<double>()) &&
                 (positive ? it->get<double>() > 0 : it->get<double>() >= 0),
             "import: '{}': '{}' must be a {} number, got {}", where, key,
             positive ? "positive" : "non-negative", json_excerpt(*it));
  return it->get<double>();
}

// A key that must be absent or null: zerotron has nothing that represents it.
void config_absent(const nlohmann::json& c, const char* key, const std::string& where,
                   std::string_view why) {
  const auto it = c.find(key);
  ZT_REQUIRE(it == c.end() || it->is_null(), "import: '{}': {}, '{}' is {}", where, why, key,
             it == c.end() ? "" : json_excerpt(*it));
}

// The rotation's type and scaling from one object of `name` (transformers 5's rope_parameters,
// or the older rope_scaling): "default" (or absent), "linear" with `factor`, or "llama3" with
// factor, low_freq_factor, high_freq_factor and original_max_position_embeddings. Anything else
// it holds is refused (rope_theta and a partial_rotary_factor of 1 apart).
RopeScaling rope_scaling_of(const nlohmann::json& p, const char* name, const std::string& where) {
  ZT_REQUIRE(p.is_object(), "import: '{}': '{}' must be an object, got {}", where, name,
             json_excerpt(p));
  std::string type = "default";
  for (const char* key : {"rope_type", "type"})  // the older configs spell it "type"
    if (const auto t = p.find(key); t != p.end() && !t->is_null()) {
      ZT_REQUIRE(t->is_string(), "import: '{}': '{}.{}' must be a string, got {}", where, name, key,
                 json_excerpt(*t));
      type = t->get<std::string>();
    }
  RopeScaling r;
  // The rotation's type first: an unknown one names itself rather than its first parameter.
  ZT_REQUIRE(type == "default" || type == "linear" || type == "llama3",
             "import: '{}': zerotron scales rotary embeddings by linear or llama3 only, "
             "'{}.rope_type' is {}",
             where, name, excerpt(type));
  if (type == "default") return r;
  r.type = type == "linear" ? RopeScaling::Type::Linear : RopeScaling::Type::Llama3;
  auto need = [&](const char* key) {
    const auto it = p.find(key);
    ZT_REQUIRE(it != p.end() && it->is_number() && std::isfinite(it->get<double>()) &&
                   it->get<double>() > 0,
               "import: '{}': rope_type {} needs a positive '{}.{}'", where, type, name, key);
    return it->get<double>();
  };
  r.factor = need("factor");
  if (r.type == RopeScaling::Type::Llama3) {
    r.low_freq_factor = need("low_freq_factor");
    r.high_freq_factor = need("high_freq_factor");
    const double old = need("original_max_position_embeddings");
    ZT_REQUIRE(old == std::floor(old) && old <= 1 << 30,
               "import: '{}': '{}.original_max_position_embeddings' must be a count, got {}", where,
               name, old);
    r.original_max_positions = static_cast<int>(old);
  }
  return r;
}

void check_rope_keys(const nlohmann::json& p, const char* name, const RopeScaling& r,
                     const std::string& where) {
  for (const auto& [key, value] : p.items()) {
    if (key == "rope_theta" || key == "rope_type" || key == "type") continue;
    if (key == "partial_rotary_factor" && value.is_number() && value.get<double>() == 1.0) continue;
    if (r.type != RopeScaling::Type::None && key == "factor") continue;
    if (r.type == RopeScaling::Type::Llama3 &&
        (key == "low_freq_factor" || key == "high_freq_factor" ||
         key == "original_max_position_embeddings"))
      continue;
    throw InputError(fmt::format("import: '{}': zerotron has no rotary setting '{}.{}' ({})", where,
                                 name, excerpt(key), json_excerpt(value)));
  }
}

struct RopeSettings {
  double theta = 10000.0;
  RopeScaling scaling;
};

// theta and the scaling of the rotary frequencies: transformers 5's rope_parameters {rope_type,
// rope_theta, the scaling's keys}, or the older top-level rope_theta with rope_scaling.
RopeSettings rope_settings(const nlohmann::json& c, const std::string& where) {
  RopeSettings s;
  const auto p = c.find("rope_parameters");
  const auto old = c.find("rope_scaling");
  const bool has_old = old != c.end() && !old->is_null();
  if (p == c.end() || p->is_null()) {
    if (has_old) {
      s.scaling = rope_scaling_of(*old, "rope_scaling", where);
      check_rope_keys(*old, "rope_scaling", s.scaling, where);
    }
    s.theta = config_number(c, "rope_theta", 10000.0, true, where);
    return s;
  }
  s.scaling = rope_scaling_of(*p, "rope_parameters", where);
  check_rope_keys(*p, "rope_parameters", s.scaling, where);
  // Both spellings may be present (zerotron's export writes both): they must agree.
  if (has_old)
    ZT_REQUIRE(rope_scaling_of(*old, "rope_scaling", where) == s.scaling,
               "import: '{}': 'rope_scaling' and 'rope_parameters' describe different rotations",
               where);
  s.theta = config_number(*p, "rope_theta", 10000.0, true, where);
  return s;
}

// The rotation's parameters as transformers writes them: rope_type and the scaling's keys.
nlohmann::json rope_json(const RopeScaling& r) {
  using T = RopeScaling::Type;
  nlohmann::json j = {{"rope_type", r.type == T::None     ? "default"
                                    : r.type == T::Linear ? "linear"
                                                          : "llama3"}};
  if (r.type == T::None) return j;
  j["factor"] = r.factor;
  if (r.type == T::Llama3) {
    j["low_freq_factor"] = r.low_freq_factor;
    j["high_freq_factor"] = r.high_freq_factor;
    j["original_max_position_embeddings"] = r.original_max_positions;
  }
  return j;
}

}  // namespace

bool llama_architecture(const GptConfig& c) {
  return c.rope() && c.rmsnorm() && c.swiglu && !c.add_bias_linear && !c.add_qkv_bias;
}

std::vector<HfTensor> llama_tensors(const GptConfig& c) {
  const int64_t h = c.hidden, kv = c.kv_hidden(), f = c.ffn_hidden(), v = c.vocab_size;
  std::vector<HfTensor> m = {{"embedding.word", "model.embed_tokens.weight", false, 0, v}};
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string z = "layers." + std::to_string(i) + ".",
                      l = "model.layers." + std::to_string(i) + ".";
    m.push_back({z + "ln1.weight", l + "input_layernorm.weight", false});
    m.push_back({z + "attn.qkv.weight", l + "self_attn.q_proj.weight", false, 0, h});
    m.push_back({z + "attn.qkv.weight", l + "self_attn.k_proj.weight", false, h, kv});
    m.push_back({z + "attn.qkv.weight", l + "self_attn.v_proj.weight", false, h + kv, kv});
    m.push_back({z + "attn.proj.weight", l + "self_attn.o_proj.weight", false});
    m.push_back({z + "ln2.weight", l + "post_attention_layernorm.weight", false});
    m.push_back({z + "mlp.fc.weight", l + "mlp.gate_proj.weight", false, 0, f});
    m.push_back({z + "mlp.fc.weight", l + "mlp.up_proj.weight", false, f, f});
    m.push_back({z + "mlp.proj.weight", l + "mlp.down_proj.weight", false});
  }
  m.push_back({"final_ln.weight", "model.norm.weight", false});
  if (c.untie_embeddings) m.push_back({"output_layer.weight", "lm_head.weight", false, 0, v});
  return m;
}

nlohmann::json llama_config(const GptConfig& c, const std::string& dtype) {
  const double theta = shortest(c.rotary_base);
  nlohmann::json rope = rope_json(c.rope_scaling);
  const nlohmann::json scaling =
      c.rope_scaling.type == RopeScaling::Type::None ? nlohmann::json(nullptr) : rope;
  rope["rope_theta"] = theta;
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", c.vocab_size},
          {"hidden_size", c.hidden},
          {"intermediate_size", c.ffn_hidden()},
          {"num_hidden_layers", c.num_layers},
          {"num_attention_heads", c.heads},
          {"num_key_value_heads", c.kv_heads()},
          {"head_dim", c.head_dim()},
          {"hidden_act", "silu"},
          {"max_position_embeddings", c.max_positions()},
          {"rms_norm_eps", shortest(c.norm_epsilon)},
          // Both spellings: transformers 5 reads rope_parameters, earlier versions rope_theta.
          {"rope_parameters", rope},
          {"rope_theta", theta},
          {"rope_scaling", scaling},
          {"attention_bias", false},
          {"attention_dropout", c.attention_dropout},
          {"mlp_bias", false},
          {"pretraining_tp", 1},
          {"tie_word_embeddings", !c.untie_embeddings},
          {"initializer_range", shortest(c.init_method_std)},
          {"use_cache", true},
          {"torch_dtype", dtype}};
}

GptConfig llama_model_from_config(const nlohmann::json& c, const std::string& where) {
  GptConfig g;
  g.position_embedding = PositionEmbedding::Rope;
  g.normalization = Normalization::RMSNorm;
  g.swiglu = true;
  g.add_bias_linear = false;
  g.hidden = hf_config_int(c, "hidden_size", where);
  g.num_layers = hf_config_int(c, "num_hidden_layers", where);
  g.heads = hf_config_int(c, "num_attention_heads", where);
  g.vocab_size = hf_config_int(c, "vocab_size", where);
  g.padded_vocab_size = g.vocab_size;
  g.ffn_hidden_size = hf_config_int(c, "intermediate_size", where);
  g.max_position_embeddings = hf_config_int(c, "max_position_embeddings", where);
  g.seq_length = g.max_position_embeddings;
  ZT_REQUIRE(g.hidden % g.heads == 0,
             "import: '{}': num_attention_heads {} must divide hidden_size {}", where, g.heads,
             g.hidden);
  if (const auto it = c.find("num_key_value_heads"); it != c.end() && !it->is_null()) {
    g.num_query_groups = hf_config_int(c, "num_key_value_heads", where);
    ZT_REQUIRE(g.heads % g.num_query_groups == 0,
               "import: '{}': num_key_value_heads {} must divide num_attention_heads {}", where,
               g.num_query_groups, g.heads);
  }
  if (const auto it = c.find("head_dim"); it != c.end() && !it->is_null())
    hf_config_is(c, "head_dim", int64_t{g.head_dim()}, where,
                 "zerotron's head dimension is hidden_size / num_attention_heads");
  ZT_REQUIRE(g.head_dim() % 2 == 0,
             "import: '{}': the rotary embedding needs an even head "
             "dimension, hidden_size / num_attention_heads is {}",
             where, g.head_dim());
  hf_config_is(c, "hidden_act", "silu", where, "zerotron's gated MLP is SwiGLU (silu)");
  hf_config_is(c, "attention_bias", false, where, "zerotron's Llama layers have no biases");
  hf_config_is(c, "mlp_bias", false, where, "zerotron's Llama layers have no biases");
  hf_config_is(c, "pretraining_tp", int64_t{1}, where,
               "zerotron computes the linear layers unsplit");
  config_absent(c, "sliding_window", where,
                "zerotron's attention is causal over the whole "
                "sequence");
  g.norm_epsilon = static_cast<float>(config_number(c, "rms_norm_eps", 1e-6, true, where));
  const RopeSettings rope = rope_settings(c, where);
  g.rotary_base = static_cast<float>(rope.theta);
  g.rope_scaling = rope.scaling;
  const double dropout = config_number(c, "attention_dropout", 0.0, false, where);
  ZT_REQUIRE(dropout < 1, "import: '{}': 'attention_dropout' must be below 1, got {}", where,
             dropout);
  g.attention_dropout = static_cast<float>(dropout);
  g.init_method_std = static_cast<float>(config_number(c, "initializer_range", 0.02, true, where));
  if (const auto it = c.find("tie_word_embeddings"); it != c.end()) {
    ZT_REQUIRE(it->is_boolean(),
               "import: '{}': 'tie_word_embeddings' must be true or false, got {}", where,
               json_excerpt(*it));
    g.untie_embeddings = !it->get<bool>();
  } else {
    g.untie_embeddings = true;  // LlamaConfig's default
  }
  return g;
}

GptConfig hf_model_from_config(std::string_view text, const std::string& where) {
  const nlohmann::json c = parse_json_input(text, where);
  ZT_REQUIRE(c.is_object(), "import: '{}' must hold a JSON object, got {}", where,
             json_type_name(c));
  std::string type;
  if (const auto it = c.find("model_type"); it != c.end() && it->is_string()) {
    type = it->get<std::string>();
  } else if (const auto a = c.find("architectures");
             a != c.end() && a->is_array() && a->size() == 1 && (*a)[0].is_string()) {
    const std::string arch = (*a)[0].get<std::string>();
    type = arch == "GPT2LMHeadModel"       ? "gpt2"
           : arch == "LlamaForCausalLM"    ? "llama"
           : arch == "MixtralForCausalLM"  ? "mixtral"
           : arch == "Qwen2MoeForCausalLM" ? "qwen2_moe"
                                           : arch;
  }
  if (type == "gpt2") return gpt2_model_from_config(text, where);
  ZT_REQUIRE(type == "llama" || type == "mixtral" || type == "qwen2_moe",
             "import: '{}': model_type {} is not one zerotron imports (gpt2, llama, mixtral, "
             "qwen2_moe)",
             where, type.empty() ? "(none)" : json_excerpt(nlohmann::json(type)));
  const char* arch = type == "llama"     ? "LlamaForCausalLM"
                     : type == "mixtral" ? "MixtralForCausalLM"
                                         : "Qwen2MoeForCausalLM";
  if (const auto a = c.find("architectures"); a != c.end() && !a->is_null())
    ZT_REQUIRE(*a == nlohmann::json::array({arch}),
               "import: '{}': 'architectures' is {}, zerotron imports {} as {}", where,
               json_excerpt(*a), type, arch);
  return type == "llama"     ? llama_model_from_config(c, where)
         : type == "mixtral" ? mixtral_model_from_config(c, where)
                             : qwen2_moe_model_from_config(c, where);
}

std::vector<HfTensor> hf_tensors(const GptConfig& c, const std::string& where) {
  if (c.moe()) {
    if (qwen2_moe_architecture(c)) return qwen2_moe_tensors(c);
    ZT_REQUIRE(mixtral_architecture(c),
               "{} holds a mixture of experts neither Hugging Face Mixtral nor Qwen2-MoE "
               "represents (both: rope, RMSNorm, SwiGLU, every layer MoE, softmax scores; "
               "Mixtral: no biases, renormalised top-k weights, no shared expert; Qwen2-MoE: "
               "no biases but q|k|v's, a shared expert with its sigmoid gate)",
               where);
    return mixtral_tensors(c);
  }
  if (c.gpt2_architecture()) return gpt2_tensors(c.num_layers);
  ZT_REQUIRE(llama_architecture(c),
             "{} holds a model neither Hugging Face GPT-2 nor Llama represents (GPT-2: learned "
             "positions, LayerNorm, GeLU, biases, tied head; Llama: rope, RMSNorm, SwiGLU, no "
             "biases)",
             where);
  return llama_tensors(c);
}

nlohmann::json hf_config(const GptConfig& c, const std::string& dtype,
                         const nlohmann::json& token_ids) {
  nlohmann::json j = qwen2_moe_architecture(c) ? qwen2_moe_config(c, dtype)
                     : c.moe()                 ? mixtral_config(c, dtype)
                     : c.gpt2_architecture()   ? gpt2_config(c, dtype)
                                               : llama_config(c, dtype);
  for (const auto& [key, id] : token_ids.items()) j[key] = id;
  return j;
}

nlohmann::json hf_token_ids(std::string_view config_text, int vocab_size, const std::string& what) {
  const nlohmann::json c = parse_json_input(config_text, what);
  nlohmann::json ids = nlohmann::json::object();
  auto integer = [](const nlohmann::json& v) { return v.is_number_integer(); };
  auto in_vocab = [&](const nlohmann::json& v) {
    return v.get<int64_t>() >= 0 && v.get<int64_t>() < vocab_size;
  };
  for (const char* key : {"bos_token_id", "eos_token_id"}) {
    const auto it = c.is_object() ? c.find(key) : c.end();
    if (it == c.end() || it->is_null()) continue;
    bool ok = integer(*it) || (it->is_array() && !it->empty() && it->size() <= 16);
    bool inside = ok && (!integer(*it) || in_vocab(*it));
    if (it->is_array())
      for (const auto& v : *it) {
        ok = ok && integer(v);
        inside = inside && ok && in_vocab(v);
      }
    ZT_REQUIRE(ok, "{}: '{}' must be a token id or a list of them, got {}", what, key,
               json_excerpt(*it));
    // Transformers only warns of an id outside the vocabulary (GPT2Config's default 50256 with a
    // small test vocabulary): it is left out, as a model without one.
    if (!inside) {
      log::info(
          "zerotron: warning: {}: '{}' {} is outside the vocabulary (vocab_size {}): left out",
          what, key, json_excerpt(*it), vocab_size);
      continue;
    }
    ids[key] = *it;
  }
  return ids;
}

}  // namespace zt
