#include "src/data/sample_check.h"

#include "src/core/error.h"

namespace zt::data {

void check_sample_ids(int64_t index, const int32_t* tokens, const int32_t* targets, int seq,
                      int vocab, std::string_view stream) {
  for (int i = 0; i < 2 * seq; ++i) {
    const int32_t id = i < seq ? tokens[i] : targets[i - seq];
    ZT_REQUIRE(id >= 0 && id < vocab,
               "sample {} of {} holds token id {} at position {}, outside the vocabulary [0, {}): "
               "the data does not match --vocab-size or the tokenizer",
               index, stream, id, i < seq ? i : i - seq + 1, vocab);
  }
}

}  // namespace zt::data
