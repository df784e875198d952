#pragma once
// The token ids of a sample checked once, on the host, before any kernel sees them: the
// embedding would silently read zeros and the loss be wrong (or, on CUDA, NaN) for an id outside
// the vocabulary.
#include <cstdint>
#include <string_view>

namespace zt::data {

// tokens[0..seq) and targets[0..seq) of the sample at `index` of `stream` (its name for the
// error: "the sample stream", "--data-path 'X'"); InputError naming the first id outside
// [0, vocab).
void check_sample_ids(int64_t index, const int32_t* tokens, const int32_t* targets, int seq,
                      int vocab, std::string_view stream);

}  // namespace zt::data
