#pragma once
// The smallest GPT the single-process model tests run: 2 layers, hidden 16, 2 heads, sequence
// 8, vocabulary 20 padded to 32, `dropout` on attention probabilities and residual branches.
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

}  // namespace zt::test
