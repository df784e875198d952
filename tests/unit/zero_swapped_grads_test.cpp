// The gradient shard on the NVMe tier (src/zero/swapped_grads.h): each unit part added to reads
// back as the host tier's shard would hold it (the first addition of a step onto zeros, later
// ones onto what the file has, both with accumulate_f32), parts never added and every part after
// zero() read as zeros, a read may cut across units, and a page changed behind the file is
// refused with an error naming the file and the checksum.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "src/core/error.h"
#include "src/core/memory_pool.h"
#include "src/model/param_layout.h"
#include "src/zero/precision.h"
#include "src/zero/swapped_grads.h"
#include "tests/support/swap_files.h"
#include "tests/support/tiny_gpt.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

class SwappedGradsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("zt_swapped_grads_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    cfg_.tier = StateTier::Nvme;
    cfg_.nvme_path = dir_.string();
  }
  void TearDown() override {
    EXPECT_TRUE(fs::is_empty(dir_)) << "a swap file was left";
    fs::remove_all(dir_);
  }
  fs::path dir_;
  StateTierConfig cfg_;
  ParamLayout layout_ = ParamLayout::gpt(test::tiny_gpt());
  // Units of 300 elements over 2 ranks: many parts, of 150 elements, none a whole page.
  Partition part_{layout_, 2, 1, 300};
  MemoryPool host_{make_host_allocator()};
};

std::vector<float> random_part(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

TEST_F(SwappedGradsTest, ReadsBackWhatTheHostTierHolds) {
  ASSERT_GT(part_.units().size(), 4u);
  for (const DType t : {DType::BF16, DType::F32}) {
    SwappedGrads g(cfg_, part_, t, host_);
    const size_t e = dtype_size(t);
    const int64_t n = part_.shard_numel();
    std::vector<char> want(static_cast<size_t>(n) * e), got(want.size());
    std::mt19937 rng(7);
    for (int step = 0; step < 2; ++step) {
      g.zero();
      std::fill(want.begin(), want.end(), 0);
      // Two micro-batches; the second adds to every other unit only.
      for (int mb = 0; mb < 2; ++mb)
        for (size_t u = 0; u < part_.units().size(); ++u) {
          if (u == 1 || (mb == 1 && u % 2 == 0)) continue;  // unit 1: never added
          const auto& pu = part_.units()[u];
          const std::vector<float> p = random_part(pu.part_len, rng);
          g.add(static_cast<int>(u), p.data());
          accumulate_f32(cpu_backend(), at(want.data(), t, pu.shard_offset), t, p.data(),
                         pu.part_len);
        }
      g.read(0, n, got.data());
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size())) << dtype_name(t);
      // A read across unit boundaries, from the middle of one part.
      const int64_t from = part_.units()[2].shard_offset + 7, len = 400;
      std::vector<char> piece(static_cast<size_t>(len) * e);
      g.read(from, len, piece.data());
      EXPECT_EQ(
          0, std::memcmp(piece.data(), want.data() + from * static_cast<int64_t>(e), piece.size()));
    }
    g.zero();
    g.read(0, n, got.data());
    EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](char c) { return c == 0; }));
    EXPECT_GE(g.file_bytes(), static_cast<uint64_t>(n) * e);
    EXPECT_EQ(g.file_bytes(), SwappedGrads::file_bytes(part_, t));
  }
}

TEST_F(SwappedGradsTest, AChangedPageIsRefusedNamingTheFile) {
  SwappedGrads g(cfg_, part_, DType::BF16, host_);
  g.zero();
  const auto& u0 = part_.units()[0];
  std::mt19937 rng(3);
  const std::vector<float> p = random_part(u0.part_len, rng);
  g.add(0, p.data());
  g.add(3, p.data());  // unit 0's part leaves the buffer: the next read goes to the file
  ASSERT_TRUE(test::overwrite_first_block_of_open_file("-grads-"));
  std::vector<uint16_t> out(static_cast<size_t>(u0.part_len));
  try {
    g.read(u0.shard_offset, u0.part_len, out.data());
    FAIL() << "a changed page was read back";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("grads"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zt
