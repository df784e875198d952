#pragma once
// Synthetic documents, deterministic from the seed (Megatron's mock GPT dataset idea): each
// document counts upward from a random start modulo the vocabulary and ends with the
// end-of-document token, so the next token is learnable and a model's loss falls well below
// ln(vocab). Sample i depends only on (seed, i): any data-parallel split sees the same data.
#include <cstdint>

#include "src/data/batch_source.h"

namespace zt {

class MockData final : public BatchSource {
 public:
  MockData(uint64_t seed, int seq_length, int vocab_size)
      : seed_(seed), seq_(seq_length), vocab_(vocab_size) {}
  // tokens[0..seq) and targets[0..seq) (= tokens shifted by one) of sample `index`.
  void sample(int64_t index, int32_t* tokens, int32_t* targets) const override;
  int32_t eod() const { return vocab_ - 1; }

 private:
  uint64_t seed_;
  int seq_;
  int vocab_;
};

}  // namespace zt
