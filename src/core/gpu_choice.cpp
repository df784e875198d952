#include "src/core/gpu_choice.h"

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "src/core/error.h"

namespace zt {

int device_for_local_rank(int local_rank, int visible, const std::string& why_none) {
  ZT_REQUIRE(visible > 0,
             "the CUDA backend needs a GPU, but none is visible to this process (check "
             "CUDA_VISIBLE_DEVICES and the driver), or run on the CPU backend{}{}",
             why_none.empty() ? "" : ": ", why_none);
  if (visible == 1) return 0;
  const int rank = local_rank < 0 ? 0 : local_rank;
  ZT_REQUIRE(rank < visible,
             "local rank {} has no GPU of its own: {} are visible to it; launch at most {} ranks "
             "per node, or give each rank one GPU of its own (CUDA_VISIBLE_DEVICES, SLURM's "
             "--gpus-per-task=1)",
             rank, visible, visible);
  return rank;
}

bool gpus_expected(const char* (*getenv_fn)(const char*), const std::string& gpus_dir) {
  if (getenv_fn == nullptr) getenv_fn = [](const char* n) -> const char* { return std::getenv(n); };
  if (const char* e = getenv_fn("ZT_EXPECT_GPU"); e != nullptr && *e != '\0')
    return std::string_view(e) != "0";
  if (getenv_fn("CUDA_VISIBLE_DEVICES") != nullptr) return false;
  std::error_code ec;
  std::filesystem::directory_iterator it(gpus_dir, ec);
  return !ec && it != std::filesystem::directory_iterator();
}

std::string cuda_version_string(int version) {
  if (version <= 0) return "none";
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

}  // namespace zt
