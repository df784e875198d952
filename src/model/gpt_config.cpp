#include "src/model/gpt_config.h"

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

int pad_vocab(int vocab_size, int divisible_by) {
  return (vocab_size + divisible_by - 1) / divisible_by * divisible_by;
}

}  // namespace zt
