#pragma once
// Writer for Megatron's MMapIndexedDataset, byte-identical to megatron/core/datasets/
// indexed_dataset.py's IndexedDatasetBuilder: tokens appended to <prefix>.bin in the chosen
// dtype, and on finalize() the .idx (one sequence per document, pointers contiguous).
// Both files are written under a ".tmp" name and renamed by finalize(), so an interrupted run
// leaves no dataset that looks complete.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>

#include "src/data/index_format.h"

namespace zt::data {

class IndexedDatasetBuilder {
 public:
  IndexedDatasetBuilder(std::string prefix, DType dtype);
  // A builder destroyed before finalize() (an error while preparing) removes its ".bin.tmp".
  ~IndexedDatasetBuilder();
  IndexedDatasetBuilder(IndexedDatasetBuilder&&) = default;
  IndexedDatasetBuilder& operator=(IndexedDatasetBuilder&&) = delete;
  IndexedDatasetBuilder(const IndexedDatasetBuilder&) = delete;
  IndexedDatasetBuilder& operator=(const IndexedDatasetBuilder&) = delete;
  // Appends one sequence and ends the document (Megatron's add_document with one sentence).
  // Throws InputError if a token does not fit the dtype.
  void add_document(std::span<const int32_t> tokens);
  // Appends one sequence without ending the document (sentence-split datasets).
  void add_sequence(std::span<const int32_t> tokens);
  void end_document();
  // Writes the .idx and renames both files into place. Nothing may be added afterwards.
  void finalize();

  size_t num_sequences() const { return tables_.sizes.size(); }
  int64_t bytes_written() const { return bin_bytes_; }

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string prefix_;
  IndexTables tables_;
  std::unique_ptr<std::FILE, Closer> bin_;
  int64_t bin_bytes_ = 0;
  std::string buffer_;
};

}  // namespace zt::data
