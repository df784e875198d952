#include "src/train/hf_gpt2.h"

#include <tuple>

namespace zt {

std::vector<HfTensor> gpt2_tensors(int layers) {
  std::vector<HfTensor> m = {{"embedding.word", "transformer.wte.weight", false},
                             {"embedding.position", "transformer.wpe.weight", false}};
  for (int i = 0; i < layers; ++i) {
    const std::string z = "layers." + std::to_string(i) + ".",
                      h = "transformer.h." + std::to_string(i) + ".";
    for (const auto& [a, b, t] : std::vector<std::tuple<const char*, const char*, bool>>{
             {"ln1.weight", "ln_1.weight", false},
             {"ln1.bias", "ln_1.bias", false},
             {"attn.qkv.weight", "attn.c_attn.weight", true},
             {"attn.qkv.bias", "attn.c_attn.bias", false},
             {"attn.proj.weight", "attn.c_proj.weight", true},
             {"attn.proj.bias", "attn.c_proj.bias", false},
             {"ln2.weight", "ln_2.weight", false},
             {"ln2.bias", "ln_2.bias", false},
             {"mlp.fc.weight", "mlp.c_fc.weight", true},
             {"mlp.fc.bias", "mlp.c_fc.bias", false},
             {"mlp.proj.weight", "mlp.c_proj.weight", true},
             {"mlp.proj.bias", "mlp.c_proj.bias", false}})
      m.push_back({z + a, h + b, t});
  }
  m.push_back({"final_ln.weight", "transformer.ln_f.weight", false});
  m.push_back({"final_ln.bias", "transformer.ln_f.bias", false});
  return m;
}

nlohmann::json gpt2_config(const GptConfig& c, const std::string& dtype) {
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"vocab_size", c.vocab_size},
          {"n_positions", c.seq_length},
          {"n_embd", c.hidden},
          {"n_layer", c.num_layers},
          {"n_head", c.heads},
          {"n_inner", c.ffn_hidden()},
          {"activation_function", "gelu_new"},  // GeLU, tanh approximation
          {"layer_norm_epsilon", 1e-5},
          {"resid_pdrop", c.hidden_dropout},
          {"attn_pdrop", c.attention_dropout},
          {"embd_pdrop", 0.0},  // zerotron has no embedding dropout
          {"tie_word_embeddings", true},
          {"bos_token_id", c.vocab_size - 1},
          {"eos_token_id", c.vocab_size - 1},
          {"torch_dtype", dtype}};
}

}  // namespace zt
