// Which GPU a rank uses (device_for_local_rank) and when a machine is expected to have one
// (gpus_expected): the rules the CUDA backend and the GPU tests apply, checked without a GPU.
#include "src/core/gpu_choice.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "src/core/error.h"

namespace zt {
namespace {

std::string refusal(int local_rank, int visible, const std::string& why = "") {
  try {
    device_for_local_rank(local_rank, visible, why);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuChoice, OneGpuPerRankByLocalRank) {
  EXPECT_EQ(device_for_local_rank(0, 8), 0);
  EXPECT_EQ(device_for_local_rank(3, 8), 3);
  EXPECT_EQ(device_for_local_rank(7, 8), 7);
  EXPECT_EQ(device_for_local_rank(1, 2), 1);
}

// SLURM --gpus-per-task=1 / --gpu-bind, Kubernetes: every rank sees only its own GPU.
TEST(GpuChoice, OneVisibleGpuIsEveryRanksOwn) {
  for (int local_rank : {0, 1, 3, 7}) EXPECT_EQ(device_for_local_rank(local_rank, 1), 0);
}

TEST(GpuChoice, ALauncherWithoutLocalRankMeansTheFirst) {
  EXPECT_EQ(device_for_local_rank(-1, 4), 0);
}

TEST(GpuChoice, MoreRanksThanGpusIsRefusedNotWrapped) {
  const std::string why = refusal(2, 2);
  EXPECT_NE(why.find("local rank 2 has no GPU of its own: 2 are visible"), std::string::npos)
      << why;
  EXPECT_NE(why.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << why;
  EXPECT_FALSE(refusal(5, 4).empty());
}

TEST(GpuChoice, NoGpuNamesWhatCudaReported) {
  const std::string why =
      refusal(0, 0, "CUDA runtime 13.0, driver 12.2: cudaGetDeviceCount failed");
  EXPECT_NE(why.find("none is visible"), std::string::npos) << why;
  EXPECT_NE(why.find("driver 12.2"), std::string::npos) << why;
}

TEST(GpuChoice, VersionStrings) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(0), "none");
}

// The environment gpus_expected() reads, one test at a time.
const char* g_expect = nullptr;
const char* g_visible = nullptr;
const char* fake_env(const char* name) {
  if (std::strcmp(name, "ZT_EXPECT_GPU") == 0) return g_expect;
  if (std::strcmp(name, "CUDA_VISIBLE_DEVICES") == 0) return g_visible;
  return nullptr;
}

TEST(GpuChoice, GpusExpectedFromTheCheckOrTheDriversList) {
  namespace fs = std::filesystem;
  const fs::path none = fs::temp_directory_path() / "zt_gpu_choice_none";
  const fs::path some = fs::temp_directory_path() / "zt_gpu_choice_some";
  fs::remove_all(none);
  fs::remove_all(some);
  fs::create_directories(none);
  fs::create_directories(some / "0000:17:00.0");
  g_expect = g_visible = nullptr;
  EXPECT_FALSE(gpus_expected(fake_env, none.string()));
  EXPECT_FALSE(gpus_expected(fake_env, (none / "absent").string()));
  EXPECT_TRUE(gpus_expected(fake_env, some.string()));
  g_visible = "";  // CUDA_VISIBLE_DEVICES set: hiding GPUs on purpose is a skip, not a failure
  EXPECT_FALSE(gpus_expected(fake_env, some.string()));
  g_expect = "1";  // tests/gpu/check.sh: nvidia-smi lists GPUs
  EXPECT_TRUE(gpus_expected(fake_env, none.string()));
  g_expect = "0";
  EXPECT_FALSE(gpus_expected(fake_env, some.string()));
  g_expect = g_visible = nullptr;
  fs::remove_all(none);
  fs::remove_all(some);
}

}  // namespace
}  // namespace zt
