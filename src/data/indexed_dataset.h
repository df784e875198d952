#pragma once
// Reader for Megatron's MMapIndexedDataset (<prefix>.idx + <prefix>.bin). The .bin is mmap'd and
// never copied; the .idx tables are copied out (their int32 block starts at byte 34, which is
// not 4-aligned, so viewing it in place would be undefined behaviour in C++).
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "src/data/index_format.h"
#include "src/data/mapped_file.h"

namespace zt::data {

class IndexedDataset {
 public:
  // Opens prefix + ".idx" / ".bin" and validates them (see parse_index and check_against_bin).
  // With vocab_size, also scans every token and rejects ids outside [0, vocab_size).
  // All failures are InputError naming the file.
  static IndexedDataset open(const std::string& prefix,
                             std::optional<int64_t> vocab_size = std::nullopt);

  DType dtype() const { return tables_.dtype; }
  size_t num_sequences() const { return tables_.sizes.size(); }
  size_t num_documents() const { return tables_.doc_idx.size() - 1; }
  std::span<const int32_t> sizes() const { return tables_.sizes; }
  std::span<const int64_t> pointers() const { return tables_.pointers; }
  std::span<const int64_t> doc_idx() const { return tables_.doc_idx; }
  int64_t total_tokens() const { return total_tokens_; }

  // Copies tokens [offset, offset + out.size()) of sequence `seq` into `out`, widened to int32.
  // Throws zt::Error (a caller bug) if the range is outside the sequence.
  void read(size_t seq, size_t offset, std::span<int32_t> out) const;
  std::vector<int32_t> sequence(size_t seq) const;

  // Throws InputError "<bin>: sequence s token t is id x, outside [0, vocab)" on the first bad id.
  void check_token_ids(int64_t vocab_size) const;

 private:
  IndexedDataset() = default;
  std::string prefix_;
  IndexTables tables_;
  MappedFile bin_;
  int64_t total_tokens_ = 0;
};

}  // namespace zt::data
