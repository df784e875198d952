#include "src/core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "src/core/error.h"

namespace zt {

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd::UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

int UniqueFd::release() {
  return std::exchange(fd_, -1);
}

RegularFile open_regular_file(int dir_fd, const char* path, int flags) {
  RegularFile r;
  UniqueFd fd(::openat(dir_fd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | flags));
  if (!fd) {
    r.error = errno;
    return r;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    r.error = errno;
    return r;
  }
  r.mode = st.st_mode;
  if (!S_ISREG(st.st_mode)) return r;
  // A regular file: reads may block again (a network filesystem's), as any reader expects.
  const int fl = ::fcntl(fd.get(), F_GETFL);
  if (fl < 0 || ::fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK) != 0) {
    r.error = errno;
    return r;
  }
  r.size = static_cast<uint64_t>(st.st_size);
  r.fd = std::move(fd);
  return r;
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "another kind of file";
}

std::string read_input_file(const std::string& path, size_t max_bytes, std::string_view what) {
  RegularFile f = open_regular_file(AT_FDCWD, path.c_str());
  ZT_REQUIRE(f.error == 0, "cannot open {} '{}': {}", what, excerpt(path, 200),
             std::strerror(f.error));
  ZT_REQUIRE(f.fd, "{} '{}' is not a regular file ({})", what, excerpt(path, 200),
             file_kind(f.mode));
  const auto size = static_cast<size_t>(f.size);
  ZT_REQUIRE(size <= max_bytes, "{} '{}' has {} bytes, more than the {} this reader accepts", what,
             excerpt(path, 200), size, max_bytes);
  std::string out(size, '\0');
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(f.fd.get(), out.data() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    ZT_REQUIRE(n >= 0, "error reading {} '{}': {}", what, excerpt(path, 200), std::strerror(errno));
    if (n == 0) break;  // shrank while we read: what is there is what we parse
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

std::string excerpt(std::string_view text, size_t max) {
  std::string out;
  size_t i = 0, chars = 0;
  for (; i < text.size() && chars < max; ++chars) {
    const auto c = static_cast<unsigned char>(text[i]);
    // Well-formed UTF-8 of a printable character passes whole; control characters and bytes
    // that do not form one become '?', so the line stays one printable line.
    const size_t len = c < 0x80                ? 1
                       : c >= 0xC2 && c < 0xE0 ? 2
                       : c >= 0xE0 && c < 0xF0 ? 3
                       : c >= 0xF0 && c < 0xF5 ? 4
                                               : 0;
    bool ok = len > 0 && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (ok && len == 1) ok = c >= 0x20 && c != 0x7f;
    if (ok && len == 2) ok = !(c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0);  // C1
    if (ok) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  if (i < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

}  // namespace zt
