#include "src/checkpoint/access_probe.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "src/core/error.h"

namespace zt {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void refuse_save(const std::string& dir, int err) {
  throw InputError(fmt::format(
      "cannot write --save '{}' on host {} ({}); --save must be a directory every rank can write "
      "(a shared filesystem)",
      dir, host_name(), std::strerror(err)));
}

[[noreturn]] void refuse_load(const std::string& dir, const std::string& what, int err) {
  throw InputError(fmt::format(
      "cannot read --load '{}' on host {} ({}: {}); --load must be a directory every rank can "
      "read (a shared filesystem)",
      dir, host_name(), what, std::strerror(err)));
}

}  // namespace

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

void check_save_writable(const std::string& dir) {
  // The nearest existing path at or above `dir`: a component that is a file stops the walk there
  // (its probe then fails with "Not a directory").
  fs::path at = fs::absolute(fs::path(dir)).lexically_normal();
  std::error_code ec;
  while (!fs::exists(at, ec) && at.has_relative_path()) at = at.parent_path();
  const fs::path probe = at / fmt::format(".zerotron_probe.{}.{}", host_name(), ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) refuse_save(dir, errno);
  ::close(fd);
  if (::unlink(probe.c_str()) != 0) refuse_save(dir, errno);
}

void check_load_readable(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) refuse_load(dir, "listing it", errno);
  ::closedir(d);
  const fs::path latest = fs::path(dir) / "latest";
  if (!fs::exists(latest, ec)) return;
  const int fd = ::open(latest.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) refuse_load(dir, "opening 'latest'", errno);
  ::close(fd);
}

}  // namespace zt
