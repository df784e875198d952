// available_host_memory over a made-up /proc and /sys/fs/cgroup: the tightest of the cgroup
// (v2 and v1, the process's cgroup and its ancestors) and MemAvailable, shared by the local
// ranks; the ulimits are the process's own (hostile.memory_ulimit_* run them).
#include "src/planner/host_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace zt {
namespace {

namespace fs = std::filesystem;

class HostMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("zt_host_memory_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    files_.proc = (root_ / "proc").string();
    files_.cgroup = (root_ / "cgroup").string();
    files_.rlimits = false;
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    const fs::path p = root_ / path;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  fs::path root_;
  HostMemoryFiles files_;
};

TEST_F(HostMemoryTest, NothingReadableIsNoBound) {
  EXPECT_LT(available_host_memory(1, files_).bytes, 0);
}

TEST_F(HostMemoryTest, MemAvailableSharedByLocalRanks) {
  write("proc/meminfo", "MemTotal:       8000000 kB\nMemAvailable:   4000000 kB\n");
  const HostMemory m = available_host_memory(2, files_);
  EXPECT_DOUBLE_EQ(m.bytes, 4000000.0 * 1024 / 2);
  EXPECT_NE(m.source.find("MemAvailable 4.10 GB"), std::string::npos) << m.source;
  EXPECT_NE(m.source.find("shared by 2 local ranks"), std::string::npos) << m.source;
}

TEST_F(HostMemoryTest, CgroupV2LimitLessUsageOfTheTightestAncestor) {
  write("proc/meminfo", "MemAvailable:   40000000 kB\n");
  write("proc/self/cgroup", "0::/job/step\n");
  write("cgroup/job/memory.max", "3000000000\n");
  write("cgroup/job/memory.current", "1000000000\n");
  write("cgroup/job/step/memory.max", "max\n");
  write("cgroup/job/step/memory.current", "500000000\n");
  const HostMemory m = available_host_memory(1, files_);
  EXPECT_DOUBLE_EQ(m.bytes, 2e9);
  EXPECT_NE(m.source.find("job/memory.max"), std::string::npos) << m.source;
}

TEST_F(HostMemoryTest, CgroupV1WithoutNamespaceReadsTheMountRoot) {
  // The container's cgroup is the mount's root; /proc/self/cgroup names the host's path.
  write("proc/self/cgroup", "5:devices:/\n4:cpu,memory:/host/path/abc\n0::/\n");
  write("cgroup/memory/memory.limit_in_bytes", "2000000000\n");
  write("cgroup/memory/memory.usage_in_bytes", "500000000\n");
  const HostMemory m = available_host_memory(3, files_);
  EXPECT_DOUBLE_EQ(m.bytes, 1.5e9 / 3);
  EXPECT_NE(m.source.find("memory.limit_in_bytes"), std::string::npos) << m.source;
}

TEST_F(HostMemoryTest, UnlimitedCgroupV1IsNoBound) {
  write("proc/self/cgroup", "4:memory:/\n");
  write("cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  write("cgroup/memory/memory.usage_in_bytes", "500000000\n");
  EXPECT_LT(available_host_memory(1, files_).bytes, 0);
}

TEST_F(HostMemoryTest, UsageAboveTheLimitLeavesNothing) {
  write("proc/self/cgroup", "0::/\n");
  write("cgroup/memory.max", "1000\n");
  write("cgroup/memory.current", "5000\n");
  EXPECT_EQ(available_host_memory(1, files_).bytes, 0);
}

TEST(HostMemory, ThisProcessHasABound) {
  // Every Linux has /proc/meminfo.
  const HostMemory m = available_host_memory(1);
  EXPECT_GT(m.bytes, 0);
  EXPECT_FALSE(m.source.empty());
}

}  // namespace
}  // namespace zt
