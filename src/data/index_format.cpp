#include "src/data/index_format.h"

#include <bit>
#include <cstring>
#include <limits>

#include "src/core/error.h"

static_assert(std::endian::native == std::endian::little,
              "the .idx/.bin format is little-endian and is read by memcpy");

namespace zt::data {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kUInt8:
    case DType::kInt8:
      return 1;
    case DType::kInt16:
    case DType::kUInt16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kFloat64:
      return 8;
  }
  return 0;
}

int64_t dtype_max(DType t) {
  switch (t) {
    case DType::kUInt8:
      return std::numeric_limits<uint8_t>::max();
    case DType::kInt8:
      return std::numeric_limits<int8_t>::max();
    case DType::kInt16:
      return std::numeric_limits<int16_t>::max();
    case DType::kUInt16:
      return std::numeric_limits<uint16_t>::max();
    case DType::kInt32:
      return std::numeric_limits<int32_t>::max();
    default:
      return std::numeric_limits<int64_t>::max();
  }
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kUInt8:
      return "uint8";
    case DType::kInt8:
      return "int8";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat64:
      return "float64";
    case DType::kFloat32:
      return "float32";
    case DType::kUInt16:
      return "uint16";
  }
  return "unknown";
}

bool is_token_dtype(DType t) {
  return t != DType::kFloat32 && t != DType::kFloat64;
}

DType optimal_dtype(int64_t vocab_size) {
  return vocab_size < 65500 ? DType::kUInt16 : DType::kInt32;
}

namespace {

class Cursor {
 public:
  Cursor(std::span<const std::byte> b, std::string_view name) : b_(b), name_(name) {}
  template <typename T>
  T scalar(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <typename T>
  std::vector<T> array(uint64_t count, std::string_view what) {
    ZT_REQUIRE(count <= (b_.size() - pos_) / sizeof(T),
               "{}: truncated: the header promises {} {} entries but only {} bytes follow", name_,
               count, what, b_.size() - pos_);
    std::vector<T> v(count);
    if (count) std::memcpy(v.data(), b_.data() + pos_, count * sizeof(T));
    pos_ += count * sizeof(T);
    return v;
  }
  void need(size_t n, std::string_view what) {
    ZT_REQUIRE(b_.size() - pos_ >= n, "{}: truncated: file ends inside the {} ({} bytes long)",
               name_, what, b_.size());
  }
  size_t left() const { return b_.size() - pos_; }

 private:
  std::span<const std::byte> b_;
  std::string_view name_;
  size_t pos_ = 0;
};

}  // namespace

IndexTables parse_index(std::span<const std::byte> idx, std::string_view name) {
  Cursor c(idx, name);
  c.need(sizeof kIndexMagic, "magic");
  ZT_REQUIRE(std::memcmp(idx.data(), kIndexMagic, sizeof kIndexMagic) == 0,
             "{}: not a Megatron MMapIndexedDataset index (bad magic; expected 'MMIDIDX\\0\\0')",
             name);
  c.array<char>(sizeof kIndexMagic, "magic");
  const auto version = c.scalar<uint64_t>("version");
  ZT_REQUIRE(version == kIndexVersion, "{}: unsupported index version {} (only {} is known)", name,
             version, kIndexVersion);
  const auto code = c.scalar<uint8_t>("dtype code");
  ZT_REQUIRE(code >= 1 && code <= 8, "{}: unknown dtype code {} (Megatron's codes are 1..8)", name,
             code);
  IndexTables t;
  t.dtype = static_cast<DType>(code);
  ZT_REQUIRE(is_token_dtype(t.dtype), "{}: dtype {} cannot hold token ids", name,
             dtype_name(t.dtype));
  const auto seqs = c.scalar<uint64_t>("sequence count");
  const auto docs = c.scalar<uint64_t>("document count");
  t.sizes = c.array<int32_t>(seqs, "sequence length");
  t.pointers = c.array<int64_t>(seqs, "sequence pointer");
  t.doc_idx = c.array<int64_t>(docs, "document index");
  ZT_REQUIRE(c.left() == 0, "{}: {} unexpected bytes after the document index", name, c.left());

  const auto item = static_cast<int64_t>(dtype_size(t.dtype));
  for (size_t i = 0; i < t.sizes.size(); ++i) {
    ZT_REQUIRE(t.sizes[i] >= 0, "{}: sequence {} has negative length {}", name, i, t.sizes[i]);
    ZT_REQUIRE(t.pointers[i] >= 0 && t.pointers[i] % item == 0,
               "{}: sequence {} has pointer {}, not a non-negative multiple of {} bytes", name, i,
               t.pointers[i], item);
    // Megatron's writer lays sequences end to end from byte 0 (_IndexWriter._get_pointers), so
    // every pointer is the previous one plus its length in bytes. A pointer that is not says
    // the sizes were read in the wrong dtype (an edited dtype code) or the index was altered.
    // Unsigned: pointers are < 2^63 and a length in bytes < 2^35, so the sum cannot wrap.
    const uint64_t expected = i == 0 ? 0
                                     : static_cast<uint64_t>(t.pointers[i - 1]) +
                                           static_cast<uint64_t>(t.sizes[i - 1]) * item;
    ZT_REQUIRE(static_cast<uint64_t>(t.pointers[i]) == expected,
               "{}: sequence {} starts at byte {}, but with dtype {} ({} bytes per token) the "
               "sequences before it end at byte {}: the dtype code or the pointers are wrong",
               name, i, t.pointers[i], dtype_name(t.dtype), item, expected);
  }
  ZT_REQUIRE(!t.doc_idx.empty() && t.doc_idx.front() == 0,
             "{}: the document index must start with 0", name);
  ZT_REQUIRE(t.doc_idx.back() == static_cast<int64_t>(seqs),
             "{}: the document index ends at {} but there are {} sequences", name, t.doc_idx.back(),
             seqs);
  for (size_t d = 1; d < t.doc_idx.size(); ++d)
    ZT_REQUIRE(t.doc_idx[d] >= t.doc_idx[d - 1] && t.doc_idx[d] <= static_cast<int64_t>(seqs),
               "{}: document index entry {} is {}, out of order or beyond {} sequences", name, d,
               t.doc_idx[d], seqs);
  return t;
}

void check_against_bin(const IndexTables& t, uint64_t bin_size, std::string_view bin_name) {
  const auto item = dtype_size(t.dtype);
  // Sequences are contiguous from byte 0 (parse_index), so the .bin holds exactly their tokens.
  const uint64_t end = t.sizes.empty() ? 0
                                       : static_cast<uint64_t>(t.pointers.back()) +
                                             static_cast<uint64_t>(t.sizes.back()) * item;
  ZT_REQUIRE(end == bin_size,
             "{}: has {} bytes, but its index describes {} ({} tokens of {} bytes): truncated, "
             "or the pair does not belong together",
             bin_name, bin_size, end, end / item, item);
}

std::string serialize_index(const IndexTables& t) {
  std::string out;
  auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  put(kIndexMagic, sizeof kIndexMagic);
  put(&kIndexVersion, 8);
  const auto code = static_cast<uint8_t>(t.dtype);
  put(&code, 1);
  const uint64_t seqs = t.sizes.size(), docs = t.doc_idx.size();
  put(&seqs, 8);
  put(&docs, 8);
  put(t.sizes.data(), t.sizes.size() * 4);
  put(t.pointers.data(), t.pointers.size() * 8);
  put(t.doc_idx.data(), t.doc_idx.size() * 8);
  return out;
}

}  // namespace zt::data
