#include "src/config/saved_model.h"

#include <fmt/format.h>

#include <algorithm>

#include "src/config/derive.h"
#include "src/core/error.h"

namespace zt {

void take_saved_model(const GptConfig& saved, const std::vector<std::string>& given,
                      std::string_view where, TrainOptions& o) {
  auto has = [&](std::string_view flag) {
    return std::find(given.begin(), given.end(), flag) != given.end();
  };
  auto take = [&](std::string_view flag, auto& field, auto value) {
    if (!has(flag)) field = value;
  };
  take("num-layers", o.num_layers, saved.num_layers);
  take("hidden-size", o.hidden_size, saved.hidden);
  take("num-attention-heads", o.num_attention_heads, saved.heads);
  take("seq-length", o.seq_length, saved.seq_length);
  take("vocab-size", o.vocab_size, saved.vocab_size);
  take("attention-dropout", o.attention_dropout, double{saved.attention_dropout});
  take("hidden-dropout", o.hidden_dropout, double{saved.hidden_dropout});
  take("position-embedding-type", o.position_embedding_type,
       std::string(saved.rope() ? "rope" : "learned_absolute"));
  take("rotary-base", o.rotary_base, double{saved.rotary_base});
  const RopeScaling& r = saved.rope_scaling;
  take("rope-scaling-type", o.rope_scaling_type, std::string(rope_scaling_name(r.type)));
  take("rope-scaling-factor", o.rope_scaling_factor, r.factor);
  take("rope-scaling-low-freq-factor", o.rope_scaling_low_freq_factor, r.low_freq_factor);
  take("rope-scaling-high-freq-factor", o.rope_scaling_high_freq_factor, r.high_freq_factor);
  take("rope-scaling-original-max-positions", o.rope_scaling_original_max_positions,
       r.original_max_positions);
  take("normalization", o.normalization, std::string(saved.rmsnorm() ? "RMSNorm" : "LayerNorm"));
  take("norm-epsilon", o.norm_epsilon, double{saved.norm_epsilon});
  take("swiglu", o.swiglu, saved.swiglu);
  take("ffn-hidden-size", o.ffn_hidden_size, saved.ffn_hidden());
  take("group-query-attention", o.group_query_attention, saved.num_query_groups > 0);
  take("num-query-groups", o.num_query_groups, std::max(saved.num_query_groups, 1));
  take("untie-embeddings-and-output-weights", o.untie_embeddings_and_output_weights,
       saved.untie_embeddings);
  take("disable-bias-linear", o.disable_bias_linear, !saved.add_bias_linear);
  take("add-qkv-bias", o.add_qkv_bias, saved.add_qkv_bias);
  take("max-position-embeddings", o.max_position_embeddings, saved.max_position_embeddings);
  take("init-method-std", o.init_method_std, double{saved.init_method_std});
  take("num-experts", o.num_experts, saved.num_experts);
  if (saved.moe()) {
    take("moe-router-topk", o.moe_router_topk, saved.moe_topk);
    take("moe-ffn-hidden-size", o.moe_ffn_hidden_size, saved.moe_ffn_hidden());
    take("moe-layer-freq", o.moe_layer_freq, saved.moe_layer_freq);
    take("moe-router-score-function", o.moe_router_score_function,
         std::string(saved.moe_sigmoid ? "sigmoid" : "softmax"));
    take("moe-router-pre-softmax", o.moe_router_pre_softmax, !saved.moe_renormalize);
    take("moe-shared-expert-intermediate-size", o.moe_shared_expert_intermediate_size,
         saved.moe_shared_ffn);
    take("moe-shared-expert-gate", o.moe_shared_expert_gate, saved.moe_shared_gate);
    // An imported model's own coefficient (Hugging Face's router_aux_loss_coef), unless given.
    take("moe-aux-loss-coeff", o.moe_aux_loss_coeff, double{saved.moe_aux_loss_coeff});
  }

  // What is left different came from a given flag: each that the parameters cannot follow.
  const GptConfig run = gpt_config_from(o);
  std::vector<std::string> differ;
  auto refuse = [&](std::string_view flag, auto is, auto was) {
    if (is != was) differ.push_back(fmt::format("--{} {} (checkpoint: {})", flag, is, was));
  };
  auto on = [](bool b) { return b ? "on" : "off"; };
  refuse("num-layers", run.num_layers, saved.num_layers);
  refuse("hidden-size", run.hidden, saved.hidden);
  refuse("num-attention-heads", run.heads, saved.heads);
  refuse("vocab-size", run.vocab_size, saved.vocab_size);
  refuse("position-embedding-type", o.position_embedding_type,
         std::string(saved.rope() ? "rope" : "learned_absolute"));
  refuse("normalization", o.normalization, std::string(saved.rmsnorm() ? "RMSNorm" : "LayerNorm"));
  refuse("swiglu", std::string(on(run.swiglu)), std::string(on(saved.swiglu)));
  // Where --swiglu or --hidden-size already differs, so does the width they imply.
  if (run.swiglu == saved.swiglu && run.hidden == saved.hidden)
    refuse("ffn-hidden-size", run.ffn_hidden(), saved.ffn_hidden());
  if (run.heads == saved.heads) refuse("num-query-groups", run.kv_heads(), saved.kv_heads());
  refuse("untie-embeddings-and-output-weights", std::string(on(run.untie_embeddings)),
         std::string(on(saved.untie_embeddings)));
  refuse("disable-bias-linear", std::string(on(!run.add_bias_linear)),
         std::string(on(!saved.add_bias_linear)));
  refuse("add-qkv-bias", std::string(on(run.add_qkv_bias)), std::string(on(saved.add_qkv_bias)));
  refuse("num-experts", run.num_experts, saved.num_experts);
  if (run.moe() && saved.moe()) {
    refuse("moe-ffn-hidden-size", run.moe_ffn_hidden(), saved.moe_ffn_hidden());
    refuse("moe-layer-freq", run.moe_layer_freq, saved.moe_layer_freq);
    refuse("moe-shared-expert-intermediate-size", run.moe_shared_ffn, saved.moe_shared_ffn);
    refuse("moe-shared-expert-gate", std::string(on(run.moe_shared_gate)),
           std::string(on(saved.moe_shared_gate)));
  }
  if (run.seq_length > saved.seq_length)
    differ.push_back(
        fmt::format("--seq-length {} (checkpoint: {} at most)", run.seq_length, saved.seq_length));
  if (differ.empty()) return;
  std::string list;
  for (const std::string& d : differ) list += (list.empty() ? "" : ", ") + d;
  throw InputError(fmt::format(
      "checkpoint '{}' holds another model than the flags ask for: {}; leave out the model flags "
      "to take the checkpoint's",
      where, list));
}

}  // namespace zt
