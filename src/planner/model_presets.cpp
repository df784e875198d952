#include "src/planner/model_presets.h"

#include "src/core/error.h"

namespace zt {

// From each model's config.json on the Hugging Face Hub (hidden_size, num_hidden_layers,
// num_attention_heads, num_key_value_heads, intermediate_size, vocab_size,
// max_position_embeddings, rope_theta, rms_norm_eps; tie_word_embeddings false, no biases):
//   meta-llama/Llama-2-7b-hf, Llama-2-13b-hf, Llama-2-70b-hf, Meta-Llama-3-8B, Meta-Llama-3-70B,
//   Llama-3.1-405B (its 131,072 positions; its llama3 rope scaling does not change a plan);
//   mistralai/Mixtral-8x7B-v0.1 (num_local_experts 8, num_experts_per_tok 2, intermediate_size
//   the experts' width; 46.7B parameters, 12.9B of them active per token).
const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = {
      {"llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096, 10000.0, 1e-5},
      {"llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096, 10000.0, 1e-5},
      {"llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096, 10000.0, 1e-5},
      {"llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, 500000.0, 1e-5},
      {"llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, 500000.0, 1e-5},
      {"llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, 131072, 500000.0, 1e-5},
      {"mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768, 1000000.0, 1e-5, 8, 2},
  };
  return presets;
}

std::string model_preset_names() {
  std::string s;
  for (const auto& p : model_presets()) {
    if (!s.empty()) s += '|';
    s += p.name;
  }
  return s;
}

void apply_model_preset(std::string_view name, const TrainFlags& line, TrainOptions& o) {
  const ModelPreset* p = nullptr;
  for (const auto& q : model_presets())
    if (name == q.name) p = &q;
  ZT_REQUIRE(p != nullptr, "unknown --preset '{}' (one of {})", name, model_preset_names());
  auto set = [&](std::string_view flag, auto& field, auto value) {
    if (!line.has(flag)) field = value;
  };
  set("num-layers", o.num_layers, p->layers);
  set("hidden-size", o.hidden_size, p->hidden);
  set("num-attention-heads", o.num_attention_heads, p->heads);
  set("ffn-hidden-size", o.ffn_hidden_size, p->ffn);
  set("vocab-size", o.vocab_size, p->vocab);
  set("seq-length", o.seq_length, p->max_positions);
  set("max-position-embeddings", o.max_position_embeddings, p->max_positions);
  set("rotary-base", o.rotary_base, p->rope_theta);
  set("norm-epsilon", o.norm_epsilon, p->norm_eps);
  set("position-embedding-type", o.position_embedding_type, std::string("rope"));
  set("normalization", o.normalization, std::string("RMSNorm"));
  set("swiglu", o.swiglu, true);
  set("untie-embeddings-and-output-weights", o.untie_embeddings_and_output_weights, true);
  set("disable-bias-linear", o.disable_bias_linear, true);
  if (p->experts > 0) {
    set("num-experts", o.num_experts, p->experts);
    set("moe-router-topk", o.moe_router_topk, p->topk);
    set("moe-ffn-hidden-size", o.moe_ffn_hidden_size, p->ffn);
  }
  if (p->kv_heads != p->heads) {
    set("group-query-attention", o.group_query_attention, true);
    set("num-query-groups", o.num_query_groups, p->kv_heads);
  }
}

}  // namespace zt
