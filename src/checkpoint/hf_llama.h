#pragma once
// Hugging Face LlamaForCausalLM naming and layout of zerotron's parameters, the one table
// `export` and `import` use for Llama-architecture models (docs/design/llama.md). Every Linear
// weight is [out, in] on both sides, so nothing is transposed; HF's q_proj, k_proj, v_proj are
// the three row groups of attn.qkv.weight and gate_proj, up_proj the two of mlp.fc.weight.
// zerotron's rotary embedding is HF's rotate_half, so q and k rows are not permuted.
// Also the choice between the Hugging Face formats (GPT-2, Llama, Mixtral: hf_mixtral.h,
// Qwen2-MoE: hf_qwen2_moe.h) by config.json.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "src/checkpoint/hf_gpt2.h"
#include "src/model/gpt_config.h"

namespace zt {

// What LlamaForCausalLM represents: rotary positions, RMSNorm, SwiGLU, no biases (not even
// q|k|v's alone; tied or untied head, any key/value head count).
bool llama_architecture(const GptConfig& c);

std::vector<HfTensor> llama_tensors(const GptConfig& c);

// config.json of a LlamaForCausalLM with this shape (`dtype` as in gpt2_config).
nlohmann::json llama_config(const GptConfig& c, const std::string& dtype);

// The model a LlamaForCausalLM config.json describes; any key zerotron cannot represent (rope
// scaling, a sliding window, biases, an activation other than silu, a head_dim other than
// hidden / heads, ...) is refused as InputError naming it. seq_length is left at
// max_position_embeddings, padded_vocab_size at vocab_size (the caller pads).
GptConfig llama_model_from_config(const nlohmann::json& c, const std::string& where);

// Any of the formats, by config.json's model_type (or architectures where model_type is
// absent).
GptConfig hf_model_from_config(std::string_view text, const std::string& where);
// The tensor table and config.json of a model one format represents (a mixture of experts:
// Mixtral or Qwen2-MoE); InputError otherwise.
// `what` opens the error line ("export: 'DIR'"). `token_ids` (bos_token_id, eos_token_id) go into
// config.json, replacing GPT-2's default of the last token.
std::vector<HfTensor> hf_tensors(const GptConfig& c, const std::string& what);
nlohmann::json hf_config(const GptConfig& c, const std::string& dtype,
                         const nlohmann::json& token_ids = nlohmann::json::object());

// config.json's bos_token_id and eos_token_id, those present and not null (each a token id
// below `vocab_size` or a list of them, as transformers allows for eos_token_id), as an object
// of those keys; InputError opened by `what` ("import: 'config.json'") for another value.
nlohmann::json hf_token_ids(std::string_view config_text, int vocab_size, const std::string& what);

}  // namespace zt
