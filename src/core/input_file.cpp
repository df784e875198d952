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
