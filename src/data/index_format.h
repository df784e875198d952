#pragma once
// Megatron-LM's MMapIndexedDataset .idx layout (megatron/core/datasets/indexed_dataset.py),
// little-endian, no padding:
//   9 bytes  magic "MMIDIDX\0\0"
//   uint64   version (1)
//   uint8    dtype code (DType below)
//   uint64   sequence count S
//   uint64   document count D (= documents + 1: it is a fence-post list starting at 0)
//   int32[S] sequence lengths in tokens
//   int64[S] sequence byte offsets into .bin
//   int64[D] document indices: document d is sequences [doc[d], doc[d+1])
// This file holds the pure parser and serializer, with no I/O, so the fuzzer can drive it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zt::data {

// Megatron's DType codes (the numbers are the on-disk format).
enum class DType : uint8_t {
  kUInt8 = 1,
  kInt8 = 2,
  kInt16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kFloat64 = 6,
  kFloat32 = 7,
  kUInt16 = 8,
};

inline constexpr char kIndexMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
inline constexpr uint64_t kIndexVersion = 1;
inline constexpr size_t kIndexHeaderBytes = 9 + 8 + 1 + 8 + 8;

size_t dtype_size(DType t);
// The largest token id a token dtype holds.
int64_t dtype_max(DType t);
std::string_view dtype_name(DType t);
// Token dtypes zerotron reads and writes; floats are valid Megatron codes but not token ids.
bool is_token_dtype(DType t);
// Megatron's DType.optimal_dtype: uint16 when the vocab has fewer than 65500 ids, else int32.
DType optimal_dtype(int64_t vocab_size);

struct IndexTables {
  DType dtype = DType::kUInt16;
  std::vector<int32_t> sizes;     // tokens per sequence
  std::vector<int64_t> pointers;  // byte offset of each sequence in .bin
  std::vector<int64_t> doc_idx;   // fence posts, doc_idx.front() == 0, back() == sizes.size()
};

// Parses and validates everything the .idx alone can say (magic, version, dtype, length,
// non-negative sizes, aligned non-decreasing pointers, doc index bounds and order). Throws
// InputError "<name>: <what is wrong>".
IndexTables parse_index(std::span<const std::byte> idx, std::string_view name);

// Checks the tables against a .bin of `bin_size` bytes: exactly the bytes of their sequences.
void check_against_bin(const IndexTables& t, uint64_t bin_size, std::string_view bin_name);

// The .idx bytes for the given tables, exactly as Megatron's _IndexWriter writes them.
std::string serialize_index(const IndexTables& t);

}  // namespace zt::data
