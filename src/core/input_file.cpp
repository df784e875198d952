#include "src/core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "src/core/error.h"

namespace zt {
namespace {

// Owns the descriptor so every exit path closes it.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_input_file(const std::string& path, size_t max_bytes, std::string_view what) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ZT_REQUIRE(f.fd >= 0, "cannot open {} '{}': {}", what, excerpt(path, 200), std::strerror(errno));
  struct stat st {};
  ZT_REQUIRE(::fstat(f.fd, &st) == 0, "cannot stat {} '{}': {}", what, excerpt(path, 200),
             std::strerror(errno));
  ZT_REQUIRE(S_ISREG(st.st_mode), "{} '{}' is not a regular file", what, excerpt(path, 200));
  const auto size = static_cast<size_t>(st.st_size);
  ZT_REQUIRE(size <= max_bytes, "{} '{}' has {} bytes, more than the {} this reader accepts", what,
             excerpt(path, 200), size, max_bytes);
  std::string out(size, '\0');
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(f.fd, out.data() + got, size - got);
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
  const size_t n = text.size() < max ? text.size() : max;
  out.reserve(n + 32);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  }
  if (text.size() > max) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

}  // namespace zt
