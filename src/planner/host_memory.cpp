#include "src/planner/host_memory.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

namespace zt {
namespace {

namespace fs = std::filesystem;

std::string gb(double bytes) {
  return fmt::format("{:.2f} GB", bytes / 1e9);
}

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<double> parse_number(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return static_cast<double>(v);
}

// "Key:   123 kB" in /proc/self/status or /proc/meminfo, in bytes.
std::optional<double> kib_field(const std::string& text, std::string_view key) {
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string::npos) {
    if ((at == 0 || text[at - 1] == '\n') && text.compare(at + key.size(), 1, ":") == 0) {
      const auto v = parse_number(std::string_view(text).substr(at + key.size() + 1));
      if (v) return *v * 1024;
      return std::nullopt;
    }
    at += key.size();
  }
  return std::nullopt;
}

// A cgroup file holding one number; "max" (v2) or a value near 2^63 (v1's "unlimited") is none.
std::optional<double> cgroup_value(const fs::path& path) {
  const auto text = read_text(path);
  if (!text) return std::nullopt;
  const auto v = parse_number(*text);
  if (!v || *v >= 0x1p60) return std::nullopt;
  return v;
}

struct Bound {
  double bytes;
  std::string source;
};

// The tightest limit-less-usage over the cgroup `path` and its ancestors under `root` (a
// directory that does not exist there, as in a container without a cgroup namespace, is skipped:
// its mount's root is then the container's own cgroup).
std::optional<Bound> cgroup_bound(const fs::path& root, std::string path, const char* limit_file,
                                  const char* usage_file) {
  std::optional<Bound> best;
  for (;;) {
    const fs::path dir = root / fs::path(path).relative_path();
    if (const auto limit = cgroup_value(dir / limit_file)) {
      const double usage = cgroup_value(dir / usage_file).value_or(0);
      const double left = std::max(*limit - usage, 0.0);
      if (!best || left < best->bytes)
        best = Bound{left, fmt::format("the cgroup limit {} ({}) less its usage {}", gb(*limit),
                                       (dir / limit_file).string(), gb(usage))};
    }
    if (path.empty() || path == "/") break;
    const size_t slash = path.find_last_of('/');
    path = slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
  }
  return best;
}

// The process's cgroup's bound: the v2 line "0::/path", else the v1 line naming the memory
// controller ("4:memory:/path").
std::optional<Bound> cgroup_bound(const HostMemoryFiles& f) {
  const auto text = read_text(fs::path(f.proc) / "self/cgroup");
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  std::optional<Bound> v1, v2;
  for (std::string line; std::getline(lines, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {
      v2 = cgroup_bound(f.cgroup, path, "memory.max", "memory.current");
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      v1 = cgroup_bound(fs::path(f.cgroup) / "memory", path, "memory.limit_in_bytes",
                        "memory.usage_in_bytes");
    }
  }
  if (v1 && (!v2 || v1->bytes < v2->bytes)) return v1;
  return v2;
}

// A resource limit less what the process already uses of it (`use_key` of /proc/self/status).
std::optional<Bound> rlimit_bound(int resource, const char* name, const std::string& status,
                                  std::string_view use_key) {
  rlimit r{};
  if (::getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return std::nullopt;
  const double limit = static_cast<double>(r.rlim_cur);
  const double used = kib_field(status, use_key).value_or(0);
  return Bound{std::max(limit - used, 0.0),
               fmt::format("{} {} less the {} of it this process uses ({})", name, gb(limit),
                           gb(used), use_key)};
}

}  // namespace

HostMemory available_host_memory(int local_ranks, const HostMemoryFiles& files) {
  const int ranks = std::max(local_ranks, 1);
  HostMemory best{-1, ""};
  auto consider = [&](const std::optional<Bound>& b, int shared_by) {
    if (!b) return;
    const double bytes = b->bytes / shared_by;
    if (best.bytes >= 0 && bytes >= best.bytes) return;
    best.bytes = bytes;
    best.source = shared_by > 1 ? fmt::format("{}, shared by {} local ranks", b->source, shared_by)
                                : b->source;
  };
  if (files.rlimits) {
    const std::string status = read_text(fs::path(files.proc) / "self/status").value_or("");
    consider(rlimit_bound(RLIMIT_AS, "RLIMIT_AS (ulimit -v)", status, "VmSize"), 1);
    consider(rlimit_bound(RLIMIT_DATA, "RLIMIT_DATA (ulimit -d)", status, "VmData"), 1);
  }
  consider(cgroup_bound(files), ranks);
  if (const auto meminfo = read_text(fs::path(files.proc) / "meminfo"))
    if (const auto avail = kib_field(*meminfo, "MemAvailable"))
      consider(Bound{*avail, fmt::format("MemAvailable {} in {}/meminfo", gb(*avail), files.proc)},
               ranks);
  return best;
}

}  // namespace zt
