#include "src/data/file_util.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/core/error.h"

namespace zt::data {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ZT_REQUIRE(in.good(), "cannot open '{}': {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  ZT_REQUIRE(!in.bad(), "error reading '{}'", path);
  return std::move(ss).str();
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    ZT_REQUIRE(out.good(), "cannot create '{}': {}", tmp, std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    ZT_REQUIRE(out.good(), "error writing '{}': {}", tmp, std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  ZT_REQUIRE(!ec, "cannot rename '{}' to '{}': {}", tmp, path, ec.message());
}

}  // namespace zt::data
