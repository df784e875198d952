#pragma once
// Hugging Face Qwen2MoeForCausalLM naming and layout of a mixture-of-experts model
// (docs/design/moe.md): Llama's attention and norms (hf_llama.h) with a q|k|v bias, and in every
// layer a router, SwiGLU experts and a shared expert scaled by sigmoid(x · g). Transformers
// saves the experts under their per-expert names (mlp.experts.<e>.gate_proj / up_proj /
// down_proj), each a block of rows of zerotron's stacked expert weights, so nothing is
// transposed or permuted.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/checkpoint/hf_gpt2.h"
#include "src/model/gpt_config.h"

namespace zt {

// What Qwen2MoeForCausalLM represents: rope, RMSNorm, SwiGLU, no biases but an optional q|k|v
// one, every layer a MoE layer of softmax scores (top-k weights renormalised or not) with a
// gated shared expert.
bool qwen2_moe_architecture(const GptConfig& c);

std::vector<HfTensor> qwen2_moe_tensors(const GptConfig& c);

// config.json of a Qwen2MoeForCausalLM with this shape (`dtype` as in gpt2_config);
// intermediate_size is the dense MLP's width, which no layer uses.
nlohmann::json qwen2_moe_config(const GptConfig& c, const std::string& dtype);

// The model a Qwen2MoeForCausalLM config.json describes: what llama_model_from_config reads and
// refuses, plus qkv_bias, the experts (num_experts, num_experts_per_tok, moe_intermediate_size,
// norm_topk_prob, router_aux_loss_coef) and the shared expert's width. A dense layer
// (decoder_sparse_step other than 1, a non-empty mlp_only_layers) or a sliding window is refused
// as InputError naming the key.
GptConfig qwen2_moe_model_from_config(const nlohmann::json& c, const std::string& where);

}  // namespace zt
