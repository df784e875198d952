#include "src/data/indexed_dataset.h"

#include <cstring>

#include "src/core/error.h"

namespace zt::data {
namespace {

// Calls f(const T*) with the .bin viewed as the dataset's dtype.
template <typename F>
void with_dtype(DType t, const std::byte* p, F&& f) {
  switch (t) {
    case DType::kUInt8:
      return f(reinterpret_cast<const uint8_t*>(p));
    case DType::kInt8:
      return f(reinterpret_cast<const int8_t*>(p));
    case DType::kInt16:
      return f(reinterpret_cast<const int16_t*>(p));
    case DType::kUInt16:
      return f(reinterpret_cast<const uint16_t*>(p));
    case DType::kInt32:
      return f(reinterpret_cast<const int32_t*>(p));
    case DType::kInt64:
      return f(reinterpret_cast<const int64_t*>(p));
    default:
      ZT_CHECK(false, "dtype {} is not a token dtype", dtype_name(t));
  }
}

}  // namespace

IndexedDataset IndexedDataset::open(const std::string& prefix, std::optional<int64_t> vocab_size) {
  IndexedDataset d;
  d.prefix_ = prefix;
  {
    const MappedFile idx(prefix + ".idx");
    d.tables_ = parse_index(idx.bytes(), idx.path());
    // Megatron stores ids in the narrowest dtype that holds the whole vocabulary; one that cannot
    // was made for another tokenizer (or its dtype code was edited).
    ZT_REQUIRE(!vocab_size || *vocab_size - 1 <= dtype_max(d.tables_.dtype),
               "{}: dtype {} cannot hold the vocabulary's ids [0, {}); was it prepared with a "
               "different tokenizer?",
               idx.path(), dtype_name(d.tables_.dtype), vocab_size.value_or(0));
  }
  d.bin_ = MappedFile(prefix + ".bin");
  check_against_bin(d.tables_, d.bin_.bytes().size(), d.bin_.path());
  for (int32_t s : d.tables_.sizes) d.total_tokens_ += s;
  if (vocab_size) d.check_token_ids(*vocab_size);
  return d;
}

void IndexedDataset::read(size_t seq, size_t offset, std::span<int32_t> out) const {
  ZT_CHECK(seq < num_sequences() && offset + out.size() <= static_cast<size_t>(sizes()[seq]),
           "read of tokens [{}, {}) of sequence {} (of {}, length {})", offset, offset + out.size(),
           seq, num_sequences(), seq < num_sequences() ? sizes()[seq] : -1);
  // parse_index checked every pointer is a multiple of the item size and the map is page
  // aligned, so the typed view is aligned.
  const std::byte* base = bin_.bytes().data() + pointers()[seq];
  with_dtype(dtype(), base, [&](const auto* p) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(p[offset + i]);
  });
}

std::vector<int32_t> IndexedDataset::sequence(size_t seq) const {
  ZT_CHECK(seq < num_sequences(), "sequence {} of {}", seq, num_sequences());
  std::vector<int32_t> out(static_cast<size_t>(sizes()[seq]));
  read(seq, 0, out);
  return out;
}

void IndexedDataset::check_token_ids(int64_t vocab_size) const {
  for (size_t s = 0; s < num_sequences(); ++s) {
    if (sizes()[s] == 0) continue;
    with_dtype(dtype(), bin_.bytes().data() + pointers()[s], [&](const auto* p) {
      for (int32_t i = 0; i < sizes()[s]; ++i) {
        const auto v = static_cast<int64_t>(p[i]);
        ZT_REQUIRE(v >= 0 && v < vocab_size,
                   "{}: sequence {} token {} is id {}, outside the vocab [0, {}); was it "
                   "prepared with a different tokenizer?",
                   bin_.path(), s, i, v, vocab_size);
      }
    });
  }
}

}  // namespace zt::data
