#pragma once
// Small file helpers whose failures are the user's (missing file, unwritable directory), so they
// throw InputError naming the path and the OS's reason.
#include <string>
#include <string_view>

namespace zt::data {

std::string read_file(const std::string& path);
// Writes to path + ".tmp" then renames, so a reader never sees a half-written file.
void write_file_atomic(const std::string& path, std::string_view contents);

}  // namespace zt::data
