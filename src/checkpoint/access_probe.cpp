#include "src/checkpoint/access_probe.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "src/checkpoint/directory.h"
#include "src/core/error.h"
#include "src/core/input_file.h"

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
  if (!fs::exists(dir, ec)) {
    if (ec) refuse_load(dir, "looking it up", ec.value());  // a looping link, not a missing one
    return;
  }
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) refuse_load(dir, "listing it", errno);
  ::closedir(d);
  if (!has_latest(dir)) return;
  // Never a blocking open: a FIFO named `latest` is refused here, not waited on.
  const fs::path latest = fs::path(dir) / "latest";
  const RegularFile f = open_regular_file(AT_FDCWD, latest.c_str(), O_NOFOLLOW);
  if (f.error == ELOOP)
    throw InputError(fmt::format("--load '{}': '{}' is a symbolic link; it must be a regular file",
                                 dir, latest.string()));
  if (f.error != 0) refuse_load(dir, "opening 'latest'", f.error);
  if (!f.fd)
    throw InputError(fmt::format("--load '{}': '{}' is not a regular file ({})", dir,
                                 latest.string(), file_kind(f.mode)));
}

std::string shared_probe_path(const std::string& dir, const std::string& job) {
  std::string name = job.empty() ? "job" : job;
  for (char& c : name)
    if (c == '/') c = '_';
  return (fs::path(dir) / fmt::format(".zerotron_shared_probe.{}", name)).string();
}

void write_shared_probe(const std::string& probe, const std::string& dir) {
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) refuse_save(dir, errno);
  // Visible to the other nodes' clients before they look (NFS closes flush, fsync makes sure).
  ::fsync(fd);
  ::close(fd);
}

void check_sees_shared_probe(const std::string& probe, const std::string& dir,
                             const std::string& rank0_host) {
  std::error_code ec;
  if (fs::exists(probe, ec)) return;
  throw InputError(fmt::format(
      "--save '{}' on host {} is not the directory rank 0 writes on host {} (its probe file is "
      "not here: a node-local directory?); --save must be on a filesystem every node shares",
      dir, host_name(), rank0_host));
}

std::string launch_job_id() {
  if (const char* ns = std::getenv("PMIX_NAMESPACE"); ns != nullptr && *ns != '\0') return ns;
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* step = std::getenv("SLURM_STEP_ID");
  if (job != nullptr && step != nullptr) return fmt::format("{}.{}", job, step);
  return "";
}

}  // namespace zt
