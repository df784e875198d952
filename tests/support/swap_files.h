#pragma once
// For the NVMe tier's failure tests: a swap file is unlinked as soon as it is made, so a test
// reaches it through this process's own descriptor (/proc/self/fd) to change it behind the run.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace zt::test {

// Overwrites the first 4 KiB of the open file whose name holds `name_part` with junk; false when
// no descriptor of this process names such a file or the write fails.
inline bool overwrite_first_block_of_open_file(const std::string& name_part) {
  namespace fs = std::filesystem;
  std::string path;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(e.path(), ec);
    if (!ec && target.string().find(name_part) != std::string::npos) path = e.path();
  }
  if (path.empty()) return false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const std::vector<char> junk(4096, 'x');
  const bool ok = ::pwrite(fd, junk.data(), junk.size(), 0) == static_cast<ssize_t>(junk.size());
  ::close(fd);
  return ok;
}

}  // namespace zt::test
