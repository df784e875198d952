#pragma once
// The model's shape. Everything derived from it (parameter layout, FLOPs, memory plan) is a
// function of this struct, so the trainer, the checkpoint code and the planner agree.
// It is always the whole (unsharded) model; a tensor-parallel rank's share of it is described
// by ParamLayout::gpt(config, tp_size, tp_rank) and the local sizes below.
#include <cstdint>

#include "src/core/dtype.h"

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
  // The working precision: parameters as the model reads them, activations, checkpoints and
  // tensor-parallel activation traffic (--bf16 / --fp16; fp32 by default).
  DType dtype = DType::F32;
  // Megatron's --sequence-parallel: with tp > 1, the tokens of the regions outside the
  // tensor-parallel layers (layernorms, dropouts, residuals) are split over the tp ranks
  // (src/tensor_parallel/sequence_parallel.h). No effect at tp = 1.
  bool sequence_parallel = false;

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
// Megatron's rule in one place: the padded vocabulary of a run with `tp` tensor-parallel ranks,
// pad_vocab(vocab, divisible_by · tp), so every rank's vocabulary shard has the same size.
int padded_vocab_size(int vocab_size, int divisible_by, int tp);

// The checks tensor parallelism puts on the shape, as zt::InputError naming the flag to change:
// heads, hidden, ffn hidden and padded vocabulary divisible by tp.
void validate_tensor_parallel(const GptConfig& config, int tp);

// Whether the tokens outside the tensor-parallel regions are split over the `tp_size` ranks.
inline bool splits_sequence(const GptConfig& c, int tp_size) {
  return c.sequence_parallel && tp_size > 1;
}
// Rows of an [n, hidden] activation outside the tensor-parallel regions that one of `tp_size`
// ranks keeps: n / tp_size under sequence parallelism, else n.
inline int64_t local_rows(const GptConfig& c, int64_t n, int tp_size) {
  return splits_sequence(c, tp_size) ? n / tp_size : n;
}

// One tensor-parallel rank's sizes (tp = 1: the whole model).
struct TpDims {
  int size = 1;    // tensor-parallel ranks
  int rank = 0;    // this rank
  int heads = 0;   // local attention heads
  int hidden = 0;  // local attention width, heads · head_dim
  int ffn = 0;     // local MLP width
  int vocab = 0;   // local (padded) vocabulary rows
  int vocab_begin = 0;
  static TpDims of(const GptConfig& config, int tp_size, int tp_rank);
};

}  // namespace zt
