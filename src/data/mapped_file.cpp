#include "src/data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "src/core/error.h"
#include "src/core/input_file.h"

namespace zt::data {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  // Opened without blocking: a FIFO or a device is refused, not waited on.
  RegularFile f = open_regular_file(AT_FDCWD, path.c_str());
  ZT_REQUIRE(f.error == 0, "cannot open '{}': {}", path, std::strerror(f.error));
  ZT_REQUIRE(f.fd, "'{}' is not a regular file", path);
  size_ = static_cast<size_t>(f.size);
  fd_ = f.fd.release();
  if (size_ == 0) return;  // mmap of length 0 is an error; an empty span is the right answer
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    reset();
    throw InputError(fmt::format("cannot mmap '{}': {}", path, std::strerror(err)));
  }
  data_ = static_cast<const std::byte*>(p);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)),
      fd_(std::exchange(o.fd_, -1)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    reset();
    path_ = std::move(o.path_);
    fd_ = std::exchange(o.fd_, -1);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  reset();
}

void MappedFile::reset() noexcept {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  fd_ = -1;
  size_ = 0;
}

}  // namespace zt::data
