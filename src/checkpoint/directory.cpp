#include "src/checkpoint/directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "src/checkpoint/file.h"
#include "src/checkpoint/meta.h"
#include "src/core/error.h"
#include "src/core/log.h"

namespace zt {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kTmpSuffix = ".tmp";

// The iteration meta.json of DIR/name records, or nothing when it cannot be read.
std::optional<int64_t> recorded_iteration(const fs::path& dir, const std::string& name) {
  try {
    const auto meta = parse_meta_json(read_small_file(dir / name, "meta.json", kMaxMetaBytes),
                                      (dir / name / "meta.json").string());
    const auto& it = meta.at("iteration");
    if (!it.is_number_integer() || it.get<int64_t>() < 0) return std::nullopt;
    return it.get<int64_t>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void remove_or_fail(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
  ZT_CHECK(!ec, "removing '{}': {}", p.string(), ec.message());
}

}  // namespace

std::string iteration_name(int64_t iteration) {
  return fmt::format("iter_{:07d}", iteration);
}

std::optional<int64_t> parse_iteration_name(std::string_view name) {
  if (!name.starts_with("iter_")) return std::nullopt;
  const std::string_view digits = name.substr(5);
  if (digits.size() < 7 || digits.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (iteration_name(v) != name) return std::nullopt;  // one spelling per iteration
  return v;
}

bool has_latest(const fs::path& dir) {
  // lstat: any entry counts (a FIFO, a dangling or looping link), to be refused by the read.
  std::error_code ec;
  return fs::exists(fs::symlink_status(dir / "latest", ec));
}

std::optional<std::string> read_latest(const fs::path& dir) {
  if (!has_latest(dir)) return std::nullopt;
  std::string text = read_small_file(dir, "latest", kMaxLatestBytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  ZT_REQUIRE(parse_iteration_name(text).has_value(),
             "'{}' must name an iteration directory (like iter_0000100), it holds '{}'",
             (dir / "latest").string(), text.substr(0, 32));
  return text;
}

std::vector<int64_t> saved_iterations(const fs::path& dir) {
  std::vector<int64_t> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::optional<int64_t> n = parse_iteration_name(it->path().filename().string());
    std::error_code kind;
    if (n && fs::is_directory(it->path(), kind)) found.push_back(*n);  // a link to one counts
  }
  std::sort(found.begin(), found.end());
  return found;
}

void remove_stale_tmp(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (!n.ends_with(kTmpSuffix)) continue;
    const std::string base = n.substr(0, n.size() - kTmpSuffix.size());
    // Only what a save makes: another file that happens to end in .tmp is not ours to delete.
    if (base == "latest" || parse_iteration_name(base)) remove_or_fail(e.path());
  }
}

void prune_checkpoints(const fs::path& dir, int keep) {
  if (keep <= 0) return;
  const std::optional<std::string> latest = read_latest(dir);
  if (!latest) return;
  const std::optional<int64_t> latest_iter = recorded_iteration(dir, *latest);
  if (!latest_iter) return;                            // nothing to order against: keep everything
  std::vector<std::pair<int64_t, std::string>> older;  // at or below latest's iteration
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (!e.is_directory() || !parse_iteration_name(n) || n == *latest) continue;
    const std::optional<int64_t> it = recorded_iteration(dir, n);
    if (it && *it <= *latest_iter) older.emplace_back(*it, n);
  }
  std::sort(older.begin(), older.end(), std::greater<>());
  // `latest`'s target is one of the `keep`.
  for (size_t i = static_cast<size_t>(keep) - 1; i < older.size(); ++i)
    remove_or_fail(dir / older[i].second);
}

void publish_iteration(const fs::path& dir, int64_t iteration, int keep_last,
                       const std::function<void(PublishPoint)>& at) {
  const std::string name = iteration_name(iteration);
  const fs::path final_dir = dir / name, tmp_dir = dir / (name + std::string(kTmpSuffix));
  auto point = [&](PublishPoint p) {
    if (at) at(p);
  };
  point(PublishPoint::BeforeRename);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(final_dir, ec))) {
    fs::rename(tmp_dir, final_dir);
  } else {
    // Re-saving an existing iteration (often the one `latest` names): exchange the two names in
    // one step, so iter_N is complete before, during and after; the old one is then at .tmp.
    if (::renameat2(AT_FDCWD, tmp_dir.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) != 0)
      throw Error(fmt::format(
          "cannot replace '{}' atomically ({}): the new checkpoint stays in '{}' and the old one "
          "in place; save into another directory",
          final_dir.string(), std::strerror(errno), tmp_dir.string()));
    sync_dir(dir);
    point(PublishPoint::AfterExchange);
    remove_or_fail(tmp_dir);
  }
  sync_dir(dir);
  point(PublishPoint::BeforeLatest);
  write_file_atomically(dir, "latest", name + "\n");
  sync_dir(dir);
  point(PublishPoint::BeforePrune);
  prune_checkpoints(dir, keep_last);
}

void prepare_save_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  ZT_REQUIRE(!ec, "--save '{}': cannot create the directory ({}); choose a writable directory", dir,
             ec.message());
  ZT_REQUIRE(fs::is_directory(dir, ec), "--save '{}' is not a directory", dir);
  // A probe file written and synced: a read-only mount or a full disk shows here, not hours
  // later at the first save.
  const fs::path probe = fs::path(dir) / fmt::format(".zerotron_write_test.{}", ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  ZT_REQUIRE(fd >= 0, "--save '{}' is not writable ({}); choose a writable directory", dir,
             std::strerror(errno));
  Fd f(fd, probe.string());
  const bool ok = ::write(fd, "z", 1) == 1 && ::fsync(fd) == 0;
  const int err = errno;
  fs::remove(probe, ec);
  ZT_REQUIRE(ok, "--save '{}' is not writable ({}); choose a writable directory", dir,
             std::strerror(err));
}

CheckpointLock::CheckpointLock(const std::string& dir) {
  const fs::path path = fs::path(dir) / "zerotron.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  ZT_REQUIRE(fd_ >= 0, "--save '{}': cannot open the lock file '{}' ({})", dir, path.string(),
             std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char holder[128] = {};
    const ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
    std::string who(holder, static_cast<size_t>(std::max<ssize_t>(n, 0)));
    while (!who.empty() && who.back() == '\n') who.pop_back();
    ::close(fd_);
    fd_ = -1;
    throw InputError(fmt::format(
        "--save '{}' is in use by another job ({}, lock '{}'); give each job its own directory",
        dir, who.empty() ? "unknown process" : who, path.string()));
  }
  char host[64] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string who = fmt::format("pid {} on {}\n", ::getpid(), host);
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, who.data(), who.size(), 0) < 0) {
    // The holder's name is only for the other job's message; the lock itself is what matters.
  }
}

CheckpointLock::~CheckpointLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace zt
