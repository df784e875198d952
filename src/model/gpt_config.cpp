#include "src/model/gpt_config.h"

#include <limits>

#include "src/core/error.h"

namespace zt {

int64_t GptConfig::num_parameters() const {
  const int64_t h = hidden, f = ffn_hidden();
  const int64_t per_layer =
      2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (f * h + f) + (h * f + h);
  return int64_t{padded_vocab_size} * h + int64_t{seq_length} * h + num_layers * per_layer + 2 * h;
}

double GptConfig::flops_per_token() const {
  return 6.0 * static_cast<double>(num_parameters()) +
         12.0 * num_layers * static_cast<double>(hidden) * seq_length;
}

namespace {

// In 64 bits: neither the multiple (divisible_by · tp) nor the rounding up may wrap an int.
int64_t pad_vocab64(int64_t vocab_size, int64_t divisible_by) {
  return (vocab_size + divisible_by - 1) / divisible_by * divisible_by;
}

}  // namespace

int pad_vocab(int vocab_size, int divisible_by) {
  const int64_t padded = pad_vocab64(vocab_size, divisible_by);
  ZT_REQUIRE(padded <= std::numeric_limits<int>::max(),
             "padding the vocabulary of {} to a multiple of {} gives {} rows, more than {}",
             vocab_size, divisible_by, padded, std::numeric_limits<int>::max());
  return static_cast<int>(padded);
}

int padded_vocab_size(int vocab_size, int divisible_by, int tp) {
  ZT_REQUIRE(divisible_by > 0 && tp > 0,
             "--make-vocab-size-divisible-by {} and --tensor-model-parallel-size {} must be "
             "positive",
             divisible_by, tp);
  const int64_t padded = pad_vocab64(vocab_size, int64_t{divisible_by} * tp);
  ZT_REQUIRE(padded <= std::numeric_limits<int>::max(),
             "--make-vocab-size-divisible-by {} x --tensor-model-parallel-size {} pads the "
             "vocabulary of {} to {} rows, more than {}; use a smaller "
             "--make-vocab-size-divisible-by (Megatron's default is 128)",
             divisible_by, tp, vocab_size, padded, std::numeric_limits<int>::max());
  return static_cast<int>(padded);
}

void validate_tensor_parallel(const GptConfig& c, int tp) {
  ZT_REQUIRE(tp >= 1, "--tensor-model-parallel-size must be >= 1, got {}", tp);
  ZT_REQUIRE(c.heads % tp == 0,
             "--num-attention-heads {} is not divisible by --tensor-model-parallel-size {}; "
             "choose a tensor-parallel size that divides the number of heads",
             c.heads, tp);
  ZT_REQUIRE(c.hidden % tp == 0,
             "--hidden-size {} is not divisible by --tensor-model-parallel-size {}", c.hidden, tp);
  ZT_REQUIRE(c.ffn_hidden() % tp == 0,
             "the MLP width {} (4 x --hidden-size) is not divisible by "
             "--tensor-model-parallel-size {}",
             c.ffn_hidden(), tp);
  ZT_REQUIRE(
      c.padded_vocab_size % tp == 0,
      "padded vocabulary {} is not divisible by --tensor-model-parallel-size {}; pad it with "
      "padded_vocab_size(vocab, --make-vocab-size-divisible-by, tp)",
      c.padded_vocab_size, tp);
  // Megatron-LM's rule: every sample's tokens split evenly, whatever the micro-batch.
  ZT_REQUIRE(!splits_sequence(c, tp) || c.seq_length % tp == 0,
             "--sequence-parallel: --seq-length {} is not divisible by "
             "--tensor-model-parallel-size {}",
             c.seq_length, tp);
}

TpDims TpDims::of(const GptConfig& c, int tp_size, int tp_rank) {
  validate_tensor_parallel(c, tp_size);
  ZT_CHECK(tp_rank >= 0 && tp_rank < tp_size, "tp rank {} outside [0, {})", tp_rank, tp_size);
  TpDims d;
  d.size = tp_size;
  d.rank = tp_rank;
  d.heads = c.heads / tp_size;
  d.hidden = d.heads * c.head_dim();
  d.ffn = c.ffn_hidden() / tp_size;
  d.vocab = c.padded_vocab_size / tp_size;
  d.vocab_begin = tp_rank * d.vocab;
  return d;
}

}  // namespace zt
