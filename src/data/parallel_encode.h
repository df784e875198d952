#pragma once
// Encodes a batch of documents on several threads. Documents are independent, so the batch is
// split dynamically across workers (long and short documents balance out) and each worker keeps
// its own EncodeCache across batches.
#include <cstdint>
#include <string>
#include <vector>

#include "src/data/bpe_tokenizer.h"

namespace zt::data {

class ParallelEncoder {
 public:
  ParallelEncoder(const BpeTokenizer& tok, int workers, bool append_eod);
  // out[i] = ids of docs[i], plus eod when asked and the document is not empty (Megatron). Throws
  // InputError if append_eod was asked and the vocab has no "<|endoftext|>".
  void encode(const std::vector<std::string>& docs, std::vector<std::vector<int32_t>>& out);
  int workers() const { return static_cast<int>(caches_.size()); }

 private:
  const BpeTokenizer& tok_;
  std::vector<EncodeCache> caches_;
  bool append_eod_;
};

}  // namespace zt::data
