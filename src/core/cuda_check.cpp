#include "src/core/cuda_check.h"

#include <fmt/format.h>

namespace zt::cuda_detail {

int& error_rank() {
  static int rank = -1;
  return rank;
}

void throw_cuda_error(const char* call, const char* what, const char* file, int line) {
  throw Error(
      fmt::format("{} failed: {} (at {}:{}, rank {})", call, what, file, line, error_rank()));
}

}  // namespace zt::cuda_detail
