#include "src/core/swap_dir.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "src/core/error.h"

namespace zt {

std::string format_bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.2f} {}", v, kUnits[u]);
}

uint64_t free_bytes(const std::string& dir) {
  struct statvfs s {};
  ZT_REQUIRE(statvfs(dir.c_str(), &s) == 0, "{}: cannot read its free space: {}", dir,
             std::strerror(errno));
  return static_cast<uint64_t>(s.f_bavail) * static_cast<uint64_t>(s.f_frsize);
}

void require_free_space(const std::string& dir, uint64_t bytes_needed, std::string_view what) {
  const uint64_t free = free_bytes(dir);
  ZT_REQUIRE(free >= bytes_needed,
             "{} needs {} bytes ({}) in {}, which has only {} bytes ({}) free", what, bytes_needed,
             format_bytes(bytes_needed), dir, free, format_bytes(free));
}

void require_writable_dir(const std::string& dir, std::string_view what) {
  ZT_REQUIRE(!dir.empty(), "{}: the directory is empty", what);
  struct stat st {};
  ZT_REQUIRE(stat(dir.c_str(), &st) == 0, "{}: {}: {}", what, dir, std::strerror(errno));
  ZT_REQUIRE(S_ISDIR(st.st_mode), "{}: {} is not a directory", what, dir);
  ZT_REQUIRE(access(dir.c_str(), W_OK | X_OK) == 0, "{}: cannot create files in {}: {}", what, dir,
             std::strerror(errno));
}

}  // namespace zt
