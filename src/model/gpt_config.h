#pragma once
// The model's shape. Everything derived from it (parameter layout, FLOPs, memory plan) is a
// function of this struct, so the trainer, the checkpoint code and the planner agree.
#include <cstdint>

namespace zt {

struct GptConfig {
  int num_layers = 2;
  int hidden = 64;
  int heads = 4;
  int seq_length = 64;
  int vocab_size = 256;         // real vocabulary (tokens a model can see)
  int padded_vocab_size = 256;  // rows of the embedding: vocab rounded up (Megatron's padding)
  float attention_dropout = 0;
  float hidden_dropout = 0;

  int head_dim() const { return hidden / heads; }
  int ffn_hidden() const { return 4 * hidden; }
  // Parameters of the whole (unsharded) model, embeddings included, tied head counted once.
  int64_t num_parameters() const;
  // Training FLOPs per token (forward + backward): 6N for the dense part plus the attention
  // score and value products, 12·L·h·s (forward 2·2·s·h per layer and token, backward twice that).
  double flops_per_token() const;
};

// Rounds the vocabulary up to a multiple of `divisible_by` (Megatron's
// --make-vocab-size-divisible-by times the tensor-parallel size).
int pad_vocab(int vocab_size, int divisible_by);

}  // namespace zt
