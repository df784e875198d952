#include "src/checkpoint/hf_mixtral.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "src/checkpoint/hf_llama.h"
#include "src/core/error.h"
#include "src/core/json_input.h"

namespace zt {

bool mixtral_architecture(const GptConfig& c) {
  return llama_architecture(c) && c.moe() && c.moe_layer_freq == 1 && !c.moe_sigmoid &&
         c.moe_renormalize && c.moe_shared_ffn == 0;
}

std::vector<HfTensor> mixtral_tensors(const GptConfig& c) {
  const int64_t h = c.hidden, f = c.moe_ffn_hidden();
  std::vector<HfTensor> m;
  int layer = 0;
  for (HfTensor& t : llama_tensors(c)) {
    // Llama's dense MLP is replaced by each layer's router and experts, after its second norm.
    if (t.ours.find(".mlp.") != std::string::npos) continue;
    const bool ln2 = t.ours.ends_with(".ln2.weight");
    m.push_back(std::move(t));
    if (!ln2) continue;
    const std::string z = "layers." + std::to_string(layer) + ".",
                      l = "model.layers." + std::to_string(layer) + ".block_sparse_moe.";
    ++layer;
    m.push_back({z + "mlp.router.weight", l + "gate.weight", false});
    for (int64_t e = 0; e < c.num_experts; ++e) {
      const std::string x = l + "experts." + std::to_string(e) + ".";
      // Expert e's rows: gate then up in fc ([E·2F, C]), its C rows of the down matrix in proj.
      m.push_back({z + "mlp.experts.fc.weight", x + "w1.weight", false, 2 * e * f, f});
      m.push_back({z + "mlp.experts.fc.weight", x + "w3.weight", false, 2 * e * f + f, f});
      m.push_back({z + "mlp.experts.proj.weight", x + "w2.weight", false, e * h, h});
    }
  }
  return m;
}

nlohmann::json mixtral_config(const GptConfig& c, const std::string& dtype) {
  nlohmann::json j = llama_config(c, dtype);
  for (const char* key : {"mlp_bias", "pretraining_tp", "attention_bias"}) j.erase(key);
  j["architectures"] = {"MixtralForCausalLM"};
  j["model_type"] = "mixtral";
  j["intermediate_size"] = c.moe_ffn_hidden();
  j["num_local_experts"] = c.num_experts;
  j["num_experts_per_tok"] = c.moe_topk;
  j["router_aux_loss_coef"] = std::stod(fmt::format("{}", c.moe_aux_loss_coeff));
  j["router_jitter_noise"] = 0.0;
  j["output_router_logits"] = false;
  j["sliding_window"] = nullptr;
  return j;
}

float hf_router_aux_loss_coef(const nlohmann::json& c, const std::string& where) {
  const auto it = c.find("router_aux_loss_coef");
  if (it == c.end() || it->is_null()) return 0.001f;  // MixtralConfig's and Qwen2MoeConfig's
  ZT_REQUIRE(it->is_number() && std::isfinite(it->get<double>()) && it->get<double>() >= 0,
             "import: '{}': 'router_aux_loss_coef' must be a non-negative number, got {}", where,
             json_excerpt(*it));
  return static_cast<float>(it->get<double>());
}

GptConfig mixtral_model_from_config(const nlohmann::json& c, const std::string& where) {
  GptConfig g = llama_model_from_config(c, where);
  g.num_experts = hf_config_int(c, "num_local_experts", where);
  g.moe_topk = hf_config_int(c, "num_experts_per_tok", where);
  ZT_REQUIRE(g.moe_topk <= g.num_experts,
             "import: '{}': num_experts_per_tok {} exceeds num_local_experts {}", where, g.moe_topk,
             g.num_experts);
  g.moe_ffn_hidden_size = g.ffn_hidden();  // intermediate_size is the experts' width
  g.moe_layer_freq = 1;
  g.moe_sigmoid = false;
  g.moe_renormalize = true;
  // Training's input noise, which zerotron's router does not add.
  hf_config_is(c, "router_jitter_noise", 0.0, where, "zerotron's router adds no jitter");
  g.moe_aux_loss_coeff = hf_router_aux_loss_coef(c, where);
  return g;
}

}  // namespace zt
