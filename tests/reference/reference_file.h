#pragma once
// Reader for tests/reference/reference.bin, the golden values make_reference.py writes:
//   "ZTREF01\0" | uint64 LE JSON length | JSON {"config", "tensors": [{name, dtype, shape,
//   offset}]} | data section (each tensor 64-byte aligned, offsets relative to the section,
//   little-endian).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace zt::test {

template <typename T>
struct RefTensor {
  std::vector<int64_t> shape;
  std::vector<T> data;
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
};
using F32Tensor = RefTensor<float>;
using I32Tensor = RefTensor<int32_t>;

class ReferenceFile {
 public:
  // Reads and validates the whole file; throws zt::Error naming the path and the problem.
  static ReferenceFile load(const std::string& path);

  const nlohmann::json& config() const { return config_; }
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  // Tensor names in file order (parameters appear in the model's parameter order).
  const std::vector<std::string>& names() const { return names_; }
  F32Tensor f32(const std::string& name) const;
  I32Tensor i32(const std::string& name) const;

 private:
  struct Entry {
    std::string dtype;
    std::vector<int64_t> shape;
    uint64_t offset = 0;
    uint64_t numel = 0;
  };
  const Entry& entry(const std::string& name, const char* dtype) const;

  std::string path_;
  nlohmann::json config_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, Entry> index_;
  std::vector<char> data_;  // the data section
};

}  // namespace zt::test
