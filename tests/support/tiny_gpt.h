#pragma once
// The smallest GPT the single-process model tests run: 2 layers, hidden 16, 2 heads, sequence
// 8, vocabulary 20 padded to 32, `dropout` on attention probabilities and residual branches;
// and tiny_llama, the same in Llama's shape.
#include "src/model/gpt_config.h"

namespace zt::test {

inline GptConfig tiny_gpt(float dropout = 0) {
  GptConfig c;
  c.num_layers = 2;
  c.hidden = 16;
  c.heads = 2;
  c.seq_length = 8;
  c.vocab_size = 20;
  c.padded_vocab_size = 32;
  c.attention_dropout = dropout;
  c.hidden_dropout = dropout;
  return c;
}

// The same size in Llama's shape: rotary positions, RMSNorm, SwiGLU (width 24), `groups`
// key/value heads of the 4 query heads (hidden 16, head dimension 4), an untied output layer
// and no linear biases; sequence 10 (off any tile).
inline GptConfig tiny_llama(int groups = 2, float dropout = 0) {
  GptConfig c = tiny_gpt(dropout);
  c.heads = 4;
  c.seq_length = 10;
  c.position_embedding = PositionEmbedding::Rope;
  c.rotary_base = 10000.0f;
  c.normalization = Normalization::RMSNorm;
  c.norm_epsilon = 1e-6f;
  c.swiglu = true;
  c.ffn_hidden_size = 24;
  c.num_query_groups = groups;
  c.untie_embeddings = true;
  c.add_bias_linear = false;
  return c;
}

}  // namespace zt::test
