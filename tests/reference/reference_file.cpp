#include "tests/reference/reference_file.h"

#include <bit>
#include <cstring>
#include <fstream>
#include <iterator>

#include "src/core/error.h"

namespace zt::test {

namespace {

// The file is little-endian and read by memcpy; every machine we build for is too.
static_assert(std::endian::native == std::endian::little);

constexpr char kMagic[8] = {'Z', 'T', 'R', 'E', 'F', '0', '1', '\0'};
constexpr uint64_t kHeader = sizeof kMagic + sizeof(uint64_t);
constexpr uint64_t kAlign = 64;

}  // namespace

ReferenceFile ReferenceFile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ZT_CHECK(in, "reference file {}: cannot open (regenerate with make_reference.py)", path);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  ZT_CHECK(bytes.size() >= kHeader, "reference file {}: {} bytes, shorter than the header", path,
           bytes.size());
  ZT_CHECK(std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0,
           "reference file {}: bad magic (want \"ZTREF01\\0\")", path);
  uint64_t json_len = 0;
  std::memcpy(&json_len, bytes.data() + sizeof kMagic, sizeof json_len);
  ZT_CHECK(json_len <= bytes.size() - kHeader,
           "reference file {}: JSON length {} runs past the end of the {}-byte file", path,
           json_len, bytes.size());

  ReferenceFile f;
  f.path_ = path;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + kHeader, bytes.begin() + kHeader + json_len);
  } catch (const nlohmann::json::exception& e) {
    ZT_CHECK(false, "reference file {}: bad JSON header: {}", path, e.what());
  }
  ZT_CHECK(header.is_object() && header.contains("config") && header["config"].is_object() &&
               header.contains("tensors") && header["tensors"].is_array(),
           "reference file {}: header needs a \"config\" object and a \"tensors\" array", path);
  f.config_ = header["config"];
  f.data_.assign(bytes.begin() + kHeader + json_len, bytes.end());

  const uint64_t data_size = f.data_.size();
  for (const auto& t : header["tensors"]) {
    try {
      const std::string name = t.at("name").get<std::string>();
      Entry e;
      e.dtype = t.at("dtype").get<std::string>();
      e.shape = t.at("shape").get<std::vector<int64_t>>();
      e.offset = t.at("offset").get<uint64_t>();
      ZT_CHECK(e.dtype == "f32" || e.dtype == "i32", "reference file {}: tensor {}: dtype '{}'",
               path, name, e.dtype);
      ZT_CHECK(e.offset % kAlign == 0 && e.offset <= data_size,
               "reference file {}: tensor {}: offset {} unaligned or past the data ({} bytes)",
               path, name, e.offset, data_size);
      // Multiply with a bound so a corrupt shape cannot overflow before the size check.
      const uint64_t capacity = (data_size - e.offset) / 4;
      e.numel = 1;
      for (const int64_t d : e.shape) {
        ZT_CHECK(d >= 0 && (d == 0 || e.numel <= capacity / static_cast<uint64_t>(d)),
                 "reference file {}: tensor {}: shape runs past the end of the data", path, name);
        e.numel *= static_cast<uint64_t>(d);
      }
      ZT_CHECK(f.index_.emplace(name, std::move(e)).second,
               "reference file {}: tensor {} appears twice", path, name);
      f.names_.push_back(name);
    } catch (const nlohmann::json::exception& ex) {
      ZT_CHECK(false, "reference file {}: bad tensor entry {}: {}", path, t.dump(), ex.what());
    }
  }
  return f;
}

const ReferenceFile::Entry& ReferenceFile::entry(const std::string& name, const char* dtype) const {
  const auto it = index_.find(name);
  ZT_CHECK(it != index_.end(), "reference file {}: no tensor '{}'", path_, name);
  ZT_CHECK(it->second.dtype == dtype, "reference file {}: tensor '{}' is {}, not {}", path_, name,
           it->second.dtype, dtype);
  return it->second;
}

F32Tensor ReferenceFile::f32(const std::string& name) const {
  const Entry& e = entry(name, "f32");
  F32Tensor t{e.shape, std::vector<float>(e.numel)};
  std::memcpy(t.data.data(), data_.data() + e.offset, e.numel * sizeof(float));
  return t;
}

I32Tensor ReferenceFile::i32(const std::string& name) const {
  const Entry& e = entry(name, "i32");
  I32Tensor t{e.shape, std::vector<int32_t>(e.numel)};
  std::memcpy(t.data.data(), data_.data() + e.offset, e.numel * sizeof(int32_t));
  return t;
}

}  // namespace zt::test
