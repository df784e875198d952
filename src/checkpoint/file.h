#pragma once
// Files of a checkpoint directory, opened the one safe way: a checkpoint may come from someone
// else, so a name must be a plain file name inside its directory (no '/', no '..'), the file is
// opened without following a symbolic link and without blocking on a FIFO, and only a regular
// file of a bounded size is read. Writes are fsynced.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "src/core/input_file.h"

namespace zt {

// Bounds on the small files: meta.json lists one entry per shard file (a few hundred bytes each).
constexpr uint64_t kMaxMetaBytes = uint64_t{64} << 20;
constexpr uint64_t kMaxLatestBytes = 64;

// An open file descriptor with the path it names in errors, closed on scope exit.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  // Creates (or truncates) `path` for writing; throws InputError naming it on failure.
  static Fd create(const std::string& path);

  int get() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  void write(const void* p, size_t n);
  // Exactly n bytes at `offset` (a short file is an error naming it).
  void pread(void* p, size_t n, uint64_t offset) const;
  void pwrite(const void* p, size_t n, uint64_t offset);
  void sync();

 private:
  UniqueFd fd_;
  std::string path_;
};

// True when `name` is a plain file name: non-empty, no '/', not "." or "..", no NUL.
bool plain_name(std::string_view name);

// Opens the regular file `dir/name` for reading (O_NOFOLLOW | O_NONBLOCK, then fstat) and checks
// its size is at most `max_bytes`. Throws InputError naming the file otherwise. `size` receives
// the size.
Fd open_checkpoint_file(const std::filesystem::path& dir, std::string_view name, uint64_t max_bytes,
                        uint64_t& size);
// The whole of such a file (meta.json, latest).
std::string read_small_file(const std::filesystem::path& dir, std::string_view name,
                            uint64_t max_bytes);

// Writes `text` to `dir/name` through `name.tmp`, fsyncs and renames it into place.
void write_file_atomically(const std::filesystem::path& dir, const std::string& name,
                           const std::string& text);
void sync_dir(const std::filesystem::path& dir);

uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

}  // namespace zt
