#include "src/checkpoint/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "src/core/error.h"
#include "src/core/input_file.h"

namespace zt {
namespace fs = std::filesystem;

Fd Fd::create(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(fmt::format("cannot create '{}': {}", path, std::strerror(errno)));
  return Fd(fd, path);
}

void Fd::write(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd_.get(), c, n);
    if (w < 0 && errno == EINTR) continue;
    ZT_CHECK(w > 0, "writing '{}': {}", path_, std::strerror(errno));
    c += w;
    n -= static_cast<size_t>(w);
  }
}

void Fd::pread(void* p, size_t n, uint64_t offset) const {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::pread(fd_.get(), c, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw InputError(fmt::format("reading '{}': {}", path_, std::strerror(errno)));
    if (r == 0) throw InputError(fmt::format("checkpoint file '{}' is truncated", path_));
    c += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
}

void Fd::pwrite(const void* p, size_t n, uint64_t offset) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_.get(), c, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    ZT_CHECK(w > 0, "writing '{}': {}", path_, std::strerror(errno));
    c += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
}

void Fd::sync() {
  ZT_CHECK(::fsync(fd_.get()) == 0, "fsync '{}': {}", path_, std::strerror(errno));
}

bool plain_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos;
}

Fd open_checkpoint_file(const fs::path& dir, std::string_view name, uint64_t max_bytes,
                        uint64_t& size) {
  const std::string path = (dir / name).string();
  ZT_REQUIRE(plain_name(name), "checkpoint file name '{}' in '{}' is not a plain file name", name,
             dir.string());
  // The directory may be a symbolic link (an iteration kept on another disk); the file in it
  // may not: O_NOFOLLOW keeps a link from leading outside the checkpoint, and the open never
  // blocks (a FIFO planted in the directory is refused, not waited on).
  const char* at = dir.empty() ? "." : dir.c_str();  // a bare file name: the working directory
  UniqueFd d(::open(at, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC));
  if (!d)
    throw InputError(fmt::format("checkpoint directory '{}' is missing or unreadable: {}",
                                 dir.string(), std::strerror(errno)));
  RegularFile f = open_regular_file(d.get(), std::string(name).c_str(), O_NOFOLLOW);
  ZT_REQUIRE(f.error != ELOOP, "checkpoint file '{}' is a symbolic link; it must be a regular file",
             path);
  if (f.error != 0)
    throw InputError(fmt::format("checkpoint file '{}' is missing or unreadable: {}", path,
                                 std::strerror(f.error)));
  ZT_REQUIRE(f.fd, "checkpoint file '{}' is not a regular file ({})", path, file_kind(f.mode));
  size = f.size;
  ZT_REQUIRE(size <= max_bytes, "checkpoint file '{}' has {} bytes, more than the {} expected",
             path, size, max_bytes);
  return Fd(f.fd.release(), path);
}

std::string read_small_file(const fs::path& dir, std::string_view name, uint64_t max_bytes) {
  uint64_t size = 0;
  const Fd f = open_checkpoint_file(dir, name, max_bytes, size);
  std::string text(size, '\0');
  f.pread(text.data(), size, 0);
  return text;
}

void write_file_atomically(const fs::path& dir, const std::string& name, const std::string& text) {
  const fs::path tmp = dir / (name + ".tmp");
  {
    Fd f = Fd::create(tmp.string());
    f.write(text.data(), text.size());
    f.sync();
  }
  fs::rename(tmp, dir / name);
}

void sync_dir(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ZT_CHECK(fd >= 0, "opening directory '{}': {}", p.string(), std::strerror(errno));
  Fd d(fd, p.string());
  d.sync();
}

// CRC-32 (IEEE, zlib's), eight bytes a step ("slicing-by-8"): checkpoints checksum every byte
// they write and read, so the byte-at-a-time loop would be a large part of a save.
uint32_t crc32(const void* data, size_t n, uint32_t crc) {
  static const auto tables = [] {
    std::array<std::array<uint32_t, 256>, 8> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xffu];
    return t;
  }();
  crc = ~crc;
  const auto* p = static_cast<const unsigned char*>(data);
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo = 0, hi = 0;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;  // little-endian: the first four bytes are the low word
    crc = tables[7][lo & 0xffu] ^ tables[6][(lo >> 8) & 0xffu] ^ tables[5][(lo >> 16) & 0xffu] ^
          tables[4][lo >> 24] ^ tables[3][hi & 0xffu] ^ tables[2][(hi >> 8) & 0xffu] ^
          tables[1][(hi >> 16) & 0xffu] ^ tables[0][hi >> 24];
  }
  for (; n > 0; --n, ++p) crc = tables[0][(crc ^ *p) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

}  // namespace zt
