#pragma once
// A read-only memory map of a whole file. Owns the descriptor and the mapping (RAII, move-only),
// so an exception anywhere in dataset validation cannot leak either.
#include <cstddef>
#include <span>
#include <string>

namespace zt::data {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws InputError naming the path if it cannot be opened or mapped, or is not a regular
  // file (a FIFO would block, a device has no end).
  explicit MappedFile(const std::string& path);
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // The bytes; page-aligned at the start, empty for an empty file.
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void reset() noexcept;
  std::string path_;
  int fd_ = -1;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace zt::data
