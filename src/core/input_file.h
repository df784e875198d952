#pragma once
// Reading a file the user named (a config, a vocabulary, a corpus, a checkpoint's files): it must
// be a regular file and no larger than the caller's bound, checked on the open descriptor before
// a byte is read. A FIFO, a device (/dev/zero), a socket or a directory is refused instead of
// blocking or reading without end: the open itself never blocks (O_NONBLOCK, O_NOCTTY), and the
// descriptor of a regular file is made blocking again only after fstat has seen what it is.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zt {

// A file descriptor this scope owns, closed when it ends.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& o) noexcept;
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release();  // the caller owns it from here

 private:
  int fd_ = -1;
};

// What open_regular_file found: `fd` set for a regular file (its `size`), else `error` (the
// open's errno) or, when the open succeeded on something else, `mode` (its st_mode).
struct RegularFile {
  UniqueFd fd;
  int error = 0;
  mode_t mode = 0;
  uint64_t size = 0;
};
// Opens `path` (relative to `dir_fd`; AT_FDCWD for the working directory) for reading without
// ever blocking; `flags` adds to O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC (O_NOFOLLOW).
RegularFile open_regular_file(int dir_fd, const char* path, int flags = 0);
// "a FIFO", "a character device", "a directory", ... for an error line (`mode`: st_mode).
const char* file_kind(mode_t mode);

// The whole file. `what` names it in the error ("--config file"). Throws InputError.
std::string read_input_file(const std::string& path, size_t max_bytes, std::string_view what);

// At most `max` characters of `text` for an error message: printable UTF-8 passes, control
// characters and malformed bytes become '?', and the full length is given when it was cut, so
// a hostile value can neither flood the terminal nor break the one line.
std::string excerpt(std::string_view text, size_t max = 40);

}  // namespace zt
