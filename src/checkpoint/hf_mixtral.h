#pragma once
// Hugging Face MixtralForCausalLM naming and layout of a mixture-of-experts model
// (docs/design/moe.md): Llama's attention and norms (hf_llama.h), and in every layer a router
// and SwiGLU experts without biases. Transformers saves the experts under their per-expert
// names (block_sparse_moe.experts.<e>.w1 / w3 / w2: gate, up, down), each a block of rows of
// zerotron's stacked expert weights, so nothing is transposed or permuted.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/checkpoint/hf_gpt2.h"
#include "src/model/gpt_config.h"

namespace zt {

// What MixtralForCausalLM represents: a Llama-architecture model whose every layer is a MoE
// layer of softmax scores and renormalised top-k weights, without a shared expert.
bool mixtral_architecture(const GptConfig& c);

std::vector<HfTensor> mixtral_tensors(const GptConfig& c);

// config.json of a MixtralForCausalLM with this shape (`dtype` as in gpt2_config);
// router_aux_loss_coef is the model's moe_aux_loss_coeff.
nlohmann::json mixtral_config(const GptConfig& c, const std::string& dtype);

// The model a MixtralForCausalLM config.json describes: what llama_model_from_config reads and
// refuses, plus the experts (num_local_experts, num_experts_per_tok, intermediate_size as their
// width, router_aux_loss_coef); a router_jitter_noise other than 0 is refused as InputError
// naming it.
GptConfig mixtral_model_from_config(const nlohmann::json& c, const std::string& where);

// router_aux_loss_coef (the load-balancing loss's weight) of a Mixtral or Qwen2-MoE config.json,
// their default 0.001 where absent or null; InputError for a negative or non-number value.
float hf_router_aux_loss_coef(const nlohmann::json& c, const std::string& where);

}  // namespace zt
