#include "src/checkpoint/hf_qwen2_moe.h"

#include <fmt/format.h>

#include <string>

#include "src/checkpoint/hf_llama.h"
#include "src/checkpoint/hf_mixtral.h"
#include "src/core/error.h"
#include "src/core/json_input.h"

namespace zt {
namespace {

bool config_bool(const nlohmann::json& c, const char* key, bool fallback,
                 const std::string& where) {
  const auto it = c.find(key);
  if (it == c.end() || it->is_null()) return fallback;
  ZT_REQUIRE(it->is_boolean(), "import: '{}': '{}' must be true or false, got {}", where, key,
             json_excerpt(*it));
  return it->get<bool>();
}

}  // namespace

bool qwen2_moe_architecture(const GptConfig& c) {
  return c.rope() && c.rmsnorm() && c.swiglu && !c.add_bias_linear && c.moe() &&
         c.moe_layer_freq == 1 && !c.moe_sigmoid && c.moe_shared_ffn > 0 && c.moe_shared_gate;
}

std::vector<HfTensor> qwen2_moe_tensors(const GptConfig& c) {
  const int64_t h = c.hidden, kv = c.kv_hidden(), f = c.moe_ffn_hidden(), fs = c.moe_shared_ffn;
  std::vector<HfTensor> m;
  int layer = 0;
  for (HfTensor& t : llama_tensors(c)) {
    // Llama's dense MLP is replaced by each layer's router, experts and shared expert.
    if (t.ours.find(".mlp.") != std::string::npos) continue;
    const bool v = t.theirs.ends_with(".v_proj.weight"), ln2 = t.ours.ends_with(".ln2.weight");
    m.push_back(std::move(t));
    const std::string z = "layers." + std::to_string(layer) + ".",
                      l = "model.layers." + std::to_string(layer) + ".";
    if (v && c.add_qkv_bias) {
      m.push_back({z + "attn.qkv.bias", l + "self_attn.q_proj.bias", false, 0, h});
      m.push_back({z + "attn.qkv.bias", l + "self_attn.k_proj.bias", false, h, kv});
      m.push_back({z + "attn.qkv.bias", l + "self_attn.v_proj.bias", false, h + kv, kv});
    }
    if (!ln2) continue;
    ++layer;
    m.push_back({z + "mlp.router.weight", l + "mlp.gate.weight", false});
    for (int64_t e = 0; e < c.num_experts; ++e) {
      const std::string x = l + "mlp.experts." + std::to_string(e) + ".";
      // Expert e's rows: gate then up in fc ([E·2F, C]), its C rows of the down matrix in proj.
      m.push_back({z + "mlp.experts.fc.weight", x + "gate_proj.weight", false, 2 * e * f, f});
      m.push_back({z + "mlp.experts.fc.weight", x + "up_proj.weight", false, 2 * e * f + f, f});
      m.push_back({z + "mlp.experts.proj.weight", x + "down_proj.weight", false, e * h, h});
    }
    const std::string s = l + "mlp.shared_expert.";
    m.push_back({z + "mlp.shared.fc.weight", s + "gate_proj.weight", false, 0, fs});
    m.push_back({z + "mlp.shared.fc.weight", s + "up_proj.weight", false, fs, fs});
    m.push_back({z + "mlp.shared.proj.weight", s + "down_proj.weight", false});
    m.push_back({z + "mlp.shared.gate.weight", l + "mlp.shared_expert_gate.weight", false});
  }
  return m;
}

nlohmann::json qwen2_moe_config(const GptConfig& c, const std::string& dtype) {
  nlohmann::json j = llama_config(c, dtype);
  for (const char* key : {"mlp_bias", "pretraining_tp", "attention_bias", "head_dim"}) j.erase(key);
  j["architectures"] = {"Qwen2MoeForCausalLM"};
  j["model_type"] = "qwen2_moe";
  j["qkv_bias"] = c.add_qkv_bias;
  j["num_experts"] = c.num_experts;
  j["num_experts_per_tok"] = c.moe_topk;
  j["moe_intermediate_size"] = c.moe_ffn_hidden();
  j["shared_expert_intermediate_size"] = c.moe_shared_ffn;
  j["norm_topk_prob"] = c.moe_renormalize;
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = nlohmann::json::array();
  j["router_aux_loss_coef"] = std::stod(fmt::format("{}", c.moe_aux_loss_coeff));
  j["output_router_logits"] = false;
  j["use_sliding_window"] = false;
  j["sliding_window"] = nullptr;
  return j;
}

GptConfig qwen2_moe_model_from_config(const nlohmann::json& c, const std::string& where) {
  hf_config_is(c, "use_sliding_window", false, where,
               "zerotron's attention is causal over the whole sequence");
  hf_config_is(c, "decoder_sparse_step", int64_t{1}, where,
               "zerotron imports Qwen2-MoE with every layer sparse");
  if (const auto it = c.find("mlp_only_layers"); it != c.end() && !it->is_null())
    ZT_REQUIRE(*it == nlohmann::json::array(),
               "import: '{}': zerotron imports Qwen2-MoE with every layer sparse, "
               "'mlp_only_layers' is {}",
               where, json_excerpt(*it));
  if (const auto it = c.find("layer_types"); it != c.end() && !it->is_null()) {
    bool full = it->is_array();
    for (const auto& t : full ? *it : nlohmann::json::array()) full = full && t == "full_attention";
    ZT_REQUIRE(full,
               "import: '{}': zerotron's attention is causal over the whole sequence, "
               "'layer_types' is {}",
               where, json_excerpt(*it));
  }
  // With use_sliding_window false transformers ignores the window's size (and saves it as 0).
  nlohmann::json llama = c;
  for (const char* key : {"sliding_window", "max_window_layers"}) llama.erase(key);
  GptConfig g = llama_model_from_config(llama, where);
  g.add_qkv_bias = config_bool(c, "qkv_bias", true, where);  // Qwen2MoeConfig's default
  g.num_experts = hf_config_int(c, "num_experts", where);
  g.moe_topk = hf_config_int(c, "num_experts_per_tok", where);
  ZT_REQUIRE(g.moe_topk <= g.num_experts,
             "import: '{}': num_experts_per_tok {} exceeds num_experts {}", where, g.moe_topk,
             g.num_experts);
  g.moe_ffn_hidden_size = hf_config_int(c, "moe_intermediate_size", where);
  g.moe_shared_ffn = hf_config_int(c, "shared_expert_intermediate_size", where);
  g.moe_shared_gate = true;  // Qwen2-MoE always gates its shared expert
  g.moe_layer_freq = 1;
  g.moe_sigmoid = false;
  g.moe_renormalize = config_bool(c, "norm_topk_prob", false, where);
  g.moe_aux_loss_coeff = hf_router_aux_loss_coef(c, where);
  return g;
}

}  // namespace zt
