// Stream and Event wrappers and device selection.
#include "src/core/cuda_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "src/core/cuda_check.h"
#include "src/core/cuda_device.h"
#include "tests/gpu/gpu_test_util.h"

namespace zt::cuda {
namespace {

TEST(CudaDevice, CountMatchesTheRuntimeAndSelectionChecksTheLocalRank) {
  ZT_REQUIRE_GPU();
  EXPECT_EQ(device_count(), gpu_test::device_count());
  EXPECT_EQ(select_device(0), 0);
  int current = -1;
  ZT_CUDA_CHECK(cudaGetDevice(&current));
  EXPECT_EQ(current, 0);
  // More local ranks than GPUs: refused, except that one visible GPU is every rank's own.
  if (device_count() == 1)
    EXPECT_EQ(select_device(1), 0);
  else
    EXPECT_THROW(select_device(device_count()), InputError);
  EXPECT_EQ(select_device(-1), 0);  // a launcher that names no local rank
}

TEST(CudaStream, IsNonBlockingAndSynchronizes) {
  ZT_REQUIRE_GPU();
  Stream s;
  unsigned flags = 0;
  ZT_CUDA_CHECK(cudaStreamGetFlags(s.get(), &flags));
  EXPECT_EQ(flags & cudaStreamNonBlocking, cudaStreamNonBlocking);
  s.synchronize();
  EXPECT_TRUE(s.query());
  Stream high(Stream::greatest_priority());
  int prio = 0;
  ZT_CUDA_CHECK(cudaStreamGetPriority(high.get(), &prio));
  EXPECT_EQ(prio, Stream::greatest_priority());
}

TEST(CudaStream, MovesOwnership) {
  ZT_REQUIRE_GPU();
  Stream a;
  const cudaStream_t raw = a.get();
  Stream b(std::move(a));
  EXPECT_EQ(b.get(), raw);
  EXPECT_EQ(a.get(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  Event e;
  const cudaEvent_t er = e.get();
  Event f = std::move(e);
  EXPECT_EQ(f.get(), er);
}

TEST(CudaEvent, QueryIsTrueBeforeAnyRecordAndAfterSynchronize) {
  ZT_REQUIRE_GPU();
  Event e;
  EXPECT_TRUE(e.query());
  Stream s;
  e.record(s.get());
  e.synchronize();
  EXPECT_TRUE(e.query());
}

TEST(CudaEvent, WaitOrdersAnotherStream) {
  ZT_REQUIRE_GPU();
  constexpr size_t n = 64 << 20;  // large enough that the memset is still running when B starts
  void* d = nullptr;
  ZT_CUDA_CHECK(cudaMalloc(&d, n));
  std::vector<unsigned char> h(n, 0);
  {
    Stream a, b;
    Event e;
    ZT_CUDA_CHECK(cudaMemsetAsync(d, 0x11, n, a.get()));
    ZT_CUDA_CHECK(cudaMemsetAsync(d, 0x77, n, a.get()));
    e.record(a.get());
    e.wait(b.get());
    ZT_CUDA_CHECK(cudaMemcpyAsync(h.data(), d, n, cudaMemcpyDeviceToHost, b.get()));
    b.wait(e);  // the same ordering through the Stream side; harmless twice
    b.synchronize();
    EXPECT_TRUE(e.query());
  }
  ZT_CUDA_CHECK(cudaFree(d));
  EXPECT_EQ(static_cast<size_t>(std::count(h.begin(), h.end(), 0x77)), n);
}

}  // namespace
}  // namespace zt::cuda
