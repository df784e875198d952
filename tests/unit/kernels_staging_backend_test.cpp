// The staging backend fails where a GPU would (kernels/backend.h): a host read or write of device
// memory faults, and a missing join or wait leaves NaN where the copy would have put its bytes; a
// source reused before its copy is known done stops the run. Each case plants the mistake and
// shows the correct use beside it.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/backend.h"
#include "src/core/error.h"
#include "src/core/protected_memory.h"

namespace zt {
namespace {

constexpr int64_t kN = 1000;

// The host's fault on device memory: SIGSEGV (AddressSanitizer's report of one in its builds).
#if defined(__SANITIZE_ADDRESS__)
#define ZT_EXPECT_FAULT(stmt) EXPECT_DEATH(stmt, "SEGV")
#else
#define ZT_EXPECT_FAULT(stmt) EXPECT_EXIT(stmt, ::testing::KilledBySignal(SIGSEGV), "")
#endif

class StagingBackend : public ::testing::Test {
 protected:
  StagingBackend() : device_(make_staging_device_allocator(size_t{1} << 20)) {}
  Backend& be_ = cpu_staging_backend();
  MemoryPool device_;
  std::vector<float> host_ = std::vector<float>(kN);

  float* allocate() {
    buffers_.push_back(device_.allocate(kN * sizeof(float), MemCategory::Buffers));
    return static_cast<float*>(buffers_.back().data());
  }
  // The device floats at `d`, by the backend's copy.
  std::vector<float> read(const float* d) {
    std::vector<float> out(kN);
    be_.copy_to_host(out.data(), d, kN * sizeof(float));
    return out;
  }
  void write(float* d, float first) {
    for (int64_t i = 0; i < kN; ++i) host_[static_cast<size_t>(i)] = first + static_cast<float>(i);
    be_.copy_to_device(d, host_.data(), kN * sizeof(float));
  }

 private:
  std::vector<Buffer> buffers_;
};

TEST_F(StagingBackend, TheHostCannotTouchDeviceMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float* d = allocate();
  write(d, 1);
  EXPECT_EQ(read(d)[5], 6.0f);  // through the backend
  EXPECT_FALSE(device_memory_open());
  ZT_EXPECT_FAULT({ std::printf("%f\n", static_cast<double>(*static_cast<volatile float*>(d))); });
  ZT_EXPECT_FAULT({ *static_cast<volatile float*>(d) = 0; });
  {
    const DeviceAccess access;  // what a backend call or a communicator holds
    EXPECT_TRUE(device_memory_open());
    EXPECT_EQ(d[5], 6.0f);
  }
  EXPECT_FALSE(device_memory_open());
  // Host memory a host pool hands out stays the host's.
  MemoryPool host(make_host_allocator());
  Buffer h = host.allocate(64, MemCategory::Buffers);
  *static_cast<volatile float*>(h.data()) = 1;
}

TEST_F(StagingBackend, AnOffloadReadBeforeTheWaitIsNaN) {
  float* d = allocate();
  write(d, 1);
  std::vector<float> out(kN, 0);
  be_.offload(out.data(), d, kN * sizeof(float));
  EXPECT_TRUE(std::isnan(out[0])) << "the copy may not have run yet";
  be_.join_copies();
  EXPECT_TRUE(std::isnan(out[0])) << "a join orders the device's work, not the host's reads";
  be_.wait_copies();
  EXPECT_EQ(out[999], 1000.0f);
}

TEST_F(StagingBackend, AFetchComputedOnBeforeTheJoinIsNaN) {
  float* d = allocate();
  for (int64_t i = 0; i < kN; ++i) host_[static_cast<size_t>(i)] = 2;
  be_.fetch(d, host_.data(), kN * sizeof(float));
  EXPECT_TRUE(std::isnan(be_.sum_squares(d, kN))) << "compute not ordered behind the copy";
  be_.join_copies();
  EXPECT_EQ(be_.sum_squares(d, kN), 4.0 * kN);
  be_.wait_copies();
}

TEST_F(StagingBackend, AFetchSourceReusedBeforeTheWaitStopsTheRun) {
  float* d = allocate();
  be_.fetch(d, host_.data(), kN * sizeof(float));
  be_.join_copies();
  host_[7] = 3;  // the copy may still be reading it
  EXPECT_THROW(be_.wait_copies(), Error);
  be_.fetch(d, host_.data(), kN * sizeof(float));
  be_.wait_copies();
  host_[7] = 4;  // after the wait: free
  EXPECT_EQ(read(d)[7], 3.0f);
}

TEST_F(StagingBackend, AnOffloadSourceOverwrittenBeforeTheJoinStopsTheRun) {
  float* d = allocate();
  write(d, 1);
  std::vector<float> out(kN);
  be_.offload(out.data(), d, kN * sizeof(float));
  be_.fill_zero(d, kN * sizeof(float));  // compute enqueued before the join
  EXPECT_THROW(be_.join_copies(), Error);
  write(d, 1);
  be_.offload(out.data(), d, kN * sizeof(float));
  be_.join_copies();
  be_.fill_zero(d, kN * sizeof(float));  // after the join: ordered behind the copy
  be_.wait_copies();
  EXPECT_EQ(out[3], 4.0f);
}

TEST_F(StagingBackend, SideCopiesKeepStreamOrder) {
  float* a = allocate();
  float* b = allocate();
  write(a, 10);
  std::vector<float> bounce(kN);
  be_.offload(bounce.data(), a, kN * sizeof(float));
  be_.fetch(b, bounce.data(), kN * sizeof(float));  // reads what the offload ahead of it wrote
  be_.wait_copies();
  EXPECT_EQ(read(b), read(a));
  EXPECT_EQ(bounce[1], 11.0f);
}

}  // namespace
}  // namespace zt
