#include "src/core/error.h"

namespace zt {

void fail_check(const char* cond, const std::string& msg, std::source_location loc) {
  throw Error(fmt::format("{} ({} failed at {}:{})", msg, cond, loc.file_name(), loc.line()));
}

}  // namespace zt
