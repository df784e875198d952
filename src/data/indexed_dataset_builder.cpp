#include "src/data/indexed_dataset_builder.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "src/core/error.h"
#include "src/data/file_util.h"

namespace zt::data {
namespace {

template <typename T>
void append_as(std::string& buf, std::span<const int32_t> tokens, DType dtype) {
  const size_t at = buf.size();
  buf.resize(at + tokens.size() * sizeof(T));
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t v = tokens[i];
    ZT_REQUIRE(v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                   v <= static_cast<int64_t>(std::numeric_limits<T>::max()),
               "token id {} does not fit the dataset dtype {}", v, dtype_name(dtype));
    const T t = static_cast<T>(v);
    std::memcpy(buf.data() + at + i * sizeof(T), &t, sizeof(T));
  }
}

}  // namespace

IndexedDatasetBuilder::IndexedDatasetBuilder(std::string prefix, DType dtype)
    : prefix_(std::move(prefix)) {
  ZT_REQUIRE(is_token_dtype(dtype), "dtype {} cannot hold token ids", dtype_name(dtype));
  tables_.dtype = dtype;
  tables_.doc_idx.push_back(0);
  const std::string tmp = prefix_ + ".bin.tmp";
  bin_.reset(std::fopen(tmp.c_str(), "wb"));
  ZT_REQUIRE(bin_ != nullptr, "cannot create '{}': {}", tmp, std::strerror(errno));
}

IndexedDatasetBuilder::~IndexedDatasetBuilder() {
  if (bin_ == nullptr) return;  // finalized, or moved from
  bin_.reset();
  std::error_code ec;  // best effort: a destructor must not throw
  std::filesystem::remove(prefix_ + ".bin.tmp", ec);
}

void IndexedDatasetBuilder::add_sequence(std::span<const int32_t> tokens) {
  ZT_CHECK(bin_ != nullptr, "add after finalize() on '{}'", prefix_);
  ZT_REQUIRE(tokens.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
             "a sequence of {} tokens exceeds the format's int32 length", tokens.size());
  buffer_.clear();
  switch (tables_.dtype) {
    case DType::kUInt8:
      append_as<uint8_t>(buffer_, tokens, tables_.dtype);
      break;
    case DType::kInt8:
      append_as<int8_t>(buffer_, tokens, tables_.dtype);
      break;
    case DType::kInt16:
      append_as<int16_t>(buffer_, tokens, tables_.dtype);
      break;
    case DType::kUInt16:
      append_as<uint16_t>(buffer_, tokens, tables_.dtype);
      break;
    case DType::kInt32:
      append_as<int32_t>(buffer_, tokens, tables_.dtype);
      break;
    case DType::kInt64:
      append_as<int64_t>(buffer_, tokens, tables_.dtype);
      break;
    default:
      ZT_CHECK(false, "unreachable dtype");
  }
  const size_t wrote = std::fwrite(buffer_.data(), 1, buffer_.size(), bin_.get());
  ZT_REQUIRE(wrote == buffer_.size(), "error writing '{}.bin.tmp': {}", prefix_,
             std::strerror(errno));
  tables_.pointers.push_back(bin_bytes_);
  tables_.sizes.push_back(static_cast<int32_t>(tokens.size()));
  bin_bytes_ += static_cast<int64_t>(buffer_.size());
}

void IndexedDatasetBuilder::end_document() {
  tables_.doc_idx.push_back(static_cast<int64_t>(tables_.sizes.size()));
}

void IndexedDatasetBuilder::add_document(std::span<const int32_t> tokens) {
  add_sequence(tokens);
  end_document();
}

void IndexedDatasetBuilder::finalize() {
  ZT_CHECK(bin_ != nullptr, "finalize() twice on '{}'", prefix_);
  const bool ok = std::fflush(bin_.get()) == 0;
  bin_.reset();
  ZT_REQUIRE(ok, "error writing '{}.bin.tmp': {}", prefix_, std::strerror(errno));
  std::error_code ec;
  std::filesystem::rename(prefix_ + ".bin.tmp", prefix_ + ".bin", ec);
  ZT_REQUIRE(!ec, "cannot rename '{}.bin.tmp': {}", prefix_, ec.message());
  write_file_atomic(prefix_ + ".idx", serialize_index(tables_));
}

}  // namespace zt::data
