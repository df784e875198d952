// The per-rank reachability checks of --save and --load (src/checkpoint/access_probe.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "src/checkpoint/access_probe.h"
#include "src/core/error.h"

namespace zt {
namespace {
namespace fs = std::filesystem;

class CheckpointAccess : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("zt_access_test." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "file.txt") << "x";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

TEST_F(CheckpointAccess, WritableDirectoryPassesAndKeepsNoProbe) {
  check_save_writable(dir_.string());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(CheckpointAccess, MissingDirectoryIsProbedInItsNearestParentAndNotCreated) {
  const fs::path save = dir_ / "a" / "b";
  check_save_writable(save.string());
  EXPECT_FALSE(fs::exists(dir_ / "a"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(CheckpointAccess, SaveUnderAFileIsRefusedNamingTheHost) {
  const std::string save = (dir_ / "file.txt" / "sub").string();
  const std::string e = refusal([&] { check_save_writable(save); });
  EXPECT_NE(e.find("cannot write --save '" + save + "' on host " + host_name() + " ("),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("every rank can write"), std::string::npos) << e;
  EXPECT_EQ(refusal([&] { check_save_writable((dir_ / "file.txt").string()); }).empty(), false);
}

TEST_F(CheckpointAccess, LoadMissingIsNoErrorButAFileIsRefused) {
  check_load_readable((dir_ / "none").string());
  check_load_readable(dir_.string());
  std::ofstream(dir_ / "latest") << "iter_0000001";
  check_load_readable(dir_.string());
  const std::string load = (dir_ / "file.txt").string();
  const std::string e = refusal([&] { check_load_readable(load); });
  EXPECT_NE(e.find("cannot read --load '" + load + "' on host " + host_name()), std::string::npos)
      << e;
}

// The probe never blocks: a `latest` that is a FIFO (no writer: a blocking open would wait
// for ever) or a looping link is refused with one line, and so is a --load that loops.
TEST_F(CheckpointAccess, LoadLatestNotARegularFileIsRefusedWithoutBlocking) {
  const fs::path latest = dir_ / "latest";
  ASSERT_EQ(::mkfifo(latest.c_str(), 0644), 0);
  std::string e = refusal([&] { check_load_readable(dir_.string()); });
  EXPECT_NE(e.find(latest.string() + "' is not a regular file (a FIFO)"), std::string::npos) << e;
  fs::remove(latest);
  fs::create_symlink("latest", latest);
  e = refusal([&] { check_load_readable(dir_.string()); });
  EXPECT_NE(e.find(latest.string() + "' is a symbolic link"), std::string::npos) << e;
  const fs::path loop = dir_ / "loop";
  fs::create_symlink("loop", loop);
  e = refusal([&] { check_load_readable(loop.string()); });
  EXPECT_NE(e.find("cannot read --load '" + loop.string() + "'"), std::string::npos) << e;
}

}  // namespace
}  // namespace zt
