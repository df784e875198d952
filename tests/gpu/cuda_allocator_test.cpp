// The device and pinned caching allocators on real CUDA memory. The bookkeeping itself (best fit,
// coalescing, out-of-memory retry) is covered on the host by
// tests/unit/core_caching_allocator_test.
#include "src/core/cuda_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "src/core/cuda_check.h"
#include "src/core/cuda_stream.h"
#include "tests/gpu/gpu_test_util.h"

namespace zt {
namespace {

constexpr size_t kA = CachingAllocator::kAlign;

std::vector<char> to_host(const void* p, size_t n) {
  std::vector<char> h(n);
  ZT_CUDA_CHECK(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost));
  return h;
}

TEST(CudaAllocator, IsDeviceMemory) {
  ZT_REQUIRE_GPU();
  MemoryPool pool(make_cuda_allocator());
  EXPECT_EQ(pool.device(), Device::Cuda);
  Buffer b = pool.allocate(1000, MemCategory::Params);
  cudaPointerAttributes attr{};
  ZT_CUDA_CHECK(cudaPointerGetAttributes(&attr, b.data()));
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  EXPECT_EQ(b.view(Shape{250}, DType::F32).device(), Device::Cuda);
}

TEST(CudaAllocator, CachingReuseReturnsTheSameBlock) {
  ZT_REQUIRE_GPU();
  auto a = make_cuda_allocator({.slab_bytes = 8 << 20});
  CachingAllocator* raw = a.get();
  MemoryPool pool(std::move(a));
  void* first = nullptr;
  {
    Buffer b = pool.allocate(4096, MemCategory::Activations);
    first = b.data();
  }
  Buffer again = pool.allocate(4096, MemCategory::Activations);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(raw->source_allocations(), 1u);  // one cudaMalloc for both
}

TEST(CudaAllocator, ReusedBlocksAreZeroed) {
  ZT_REQUIRE_GPU();
  MemoryPool pool(make_cuda_allocator());
  {
    Buffer b = pool.allocate(1 << 20, MemCategory::Buffers);
    ZT_CUDA_CHECK(cudaMemset(b.data(), 0x5a, 1 << 20));
    ZT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  Buffer b = pool.allocate(1 << 20, MemCategory::Buffers);
  const auto h = to_host(b.data(), 1 << 20);
  EXPECT_EQ(std::count(h.begin(), h.end(), 0), 1 << 20);
}

TEST(CudaAllocator, AsyncZeroFillIsOrderedOnItsStream) {
  ZT_REQUIRE_GPU();
  cuda::Stream s;
  MemoryPool pool(make_cuda_allocator({.stream = s.get(), .async_zero_fill = true}));
  {
    Buffer b = pool.allocate(1 << 20, MemCategory::Buffers);
    ZT_CUDA_CHECK(cudaMemsetAsync(b.data(), 0x5a, 1 << 20, s.get()));
  }
  Buffer b = pool.allocate(1 << 20, MemCategory::Buffers);
  std::vector<char> h(1 << 20, 1);
  ZT_CUDA_CHECK(cudaMemcpyAsync(h.data(), b.data(), h.size(), cudaMemcpyDeviceToHost, s.get()));
  s.synchronize();
  EXPECT_EQ(std::count(h.begin(), h.end(), 0), 1 << 20);
}

TEST(CudaAllocator, CoalescingGivesFragmentationOneAfterFree) {
  ZT_REQUIRE_GPU();
  auto a = make_cuda_allocator({.slab_bytes = 2 << 20});
  CachingAllocator* raw = a.get();
  MemoryPool pool(std::move(a));
  Buffer x = pool.allocate(2 * kA, MemCategory::Params);
  Buffer y = pool.allocate(2 * kA, MemCategory::Params);
  Buffer z = pool.allocate(2 * kA, MemCategory::Params);
  const size_t slab = raw->reserved_bytes();
  y.reset();
  EXPECT_LT(pool.fragmentation(), 1.0);
  EXPECT_EQ(raw->free_space().free_bytes, slab - 4 * kA);
  x.reset();
  z.reset();
  EXPECT_EQ(pool.fragmentation(), 1.0);
  EXPECT_EQ(raw->free_space().largest_block, slab);
  // The whole slab is one block again: a request of its full size is served without cudaMalloc.
  Buffer all = pool.allocate(slab, MemCategory::Params);
  EXPECT_EQ(raw->source_allocations(), 1u);
}

TEST(CudaAllocator, FixedCapacityRefusesOverCapacityClearly) {
  ZT_REQUIRE_GPU();
  auto a = make_cuda_allocator({.fixed_capacity = 10 * kA});
  CachingAllocator* raw = a.get();
  MemoryPool pool(std::move(a));
  EXPECT_TRUE(raw->fixed());
  Buffer x = pool.allocate(2 * kA, MemCategory::Params);
  Buffer y = pool.allocate(2 * kA, MemCategory::Params);
  Buffer z = pool.allocate(2 * kA, MemCategory::Params);
  y.reset();
  EXPECT_DOUBLE_EQ(pool.fragmentation(), 4.0 / 6.0);  // the same number as SlabAllocator
  try {
    Buffer big = pool.allocate(5 * kA, MemCategory::Activations);
    FAIL() << "5 blocks are free but not in one piece";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("out of device memory"), std::string::npos) << w;
    EXPECT_NE(w.find("fixed capacity"), std::string::npos) << w;
    EXPECT_NE(w.find("largest free block"), std::string::npos) << w;
  }
  EXPECT_EQ(raw->source_allocations(), 1u);
}

TEST(CudaAllocator, FixedCapacityBeyondTheDeviceFailsAtConstruction) {
  ZT_REQUIRE_GPU();
  size_t free_b = 0, total = 0;
  ZT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total));
  EXPECT_THROW(make_cuda_allocator({.fixed_capacity = 2 * total}), Error);
  // The failed cudaMalloc left no error behind.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaAllocator, MemoryPoolCountsCategoriesAsOnTheHost) {
  ZT_REQUIRE_GPU();
  MemoryPool dev(make_cuda_allocator());
  MemoryPool host(make_host_allocator());
  for (MemoryPool* p : {&dev, &host}) {
    Buffer a = p->allocate(1000, MemCategory::Params);
    Buffer b = p->allocate(300, MemCategory::Optimizer);
    { Buffer c = p->allocate(5000, MemCategory::Activations); }
    Buffer d = p->allocate(Shape{4, 8}, DType::BF16, MemCategory::Grads);
    EXPECT_EQ(p->current(MemCategory::Params), 1000u);
    EXPECT_EQ(p->current(MemCategory::Optimizer), 300u);
    EXPECT_EQ(p->current(MemCategory::Grads), 64u);
    EXPECT_EQ(p->current(MemCategory::Activations), 0u);
    EXPECT_EQ(p->peak(MemCategory::Activations), 5000u);
  }
  EXPECT_EQ(dev.counters().current, host.counters().current);
  EXPECT_EQ(dev.counters().peak, host.counters().peak);
  EXPECT_EQ(dev.total_peak(), host.total_peak());
}

TEST(PinnedAllocator, IsPageLockedHostMemoryZeroedAndCached) {
  ZT_REQUIRE_GPU();
  auto a = make_pinned_allocator(4 << 20);
  CachingAllocator* raw = a.get();
  MemoryPool pool(std::move(a));
  EXPECT_EQ(pool.device(), Device::Cpu);
  void* first = nullptr;
  {
    Buffer b = pool.allocate(1 << 20, MemCategory::HostCheckpoints);
    first = b.data();
    cudaPointerAttributes attr{};
    ZT_CUDA_CHECK(cudaPointerGetAttributes(&attr, b.data()));
    EXPECT_EQ(attr.type, cudaMemoryTypeHost);
    std::memset(b.data(), 0x33, 1 << 20);
  }
  Buffer b = pool.allocate(1 << 20, MemCategory::HostCheckpoints);
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(raw->source_allocations(), 1u);
  const char* h = static_cast<const char*>(b.data());
  EXPECT_EQ(std::count(h, h + (1 << 20), 0), 1 << 20);
  EXPECT_EQ(pool.current(MemCategory::HostCheckpoints), size_t{1} << 20);
}

TEST(PinnedAllocator, AsyncCopiesRoundTrip) {
  ZT_REQUIRE_GPU();
  MemoryPool dev(make_cuda_allocator());
  MemoryPool pinned(make_pinned_allocator());
  constexpr size_t n = 1 << 16;
  Buffer d = dev.allocate(n * sizeof(float), MemCategory::Checkpoints);
  Buffer h = pinned.allocate(n * sizeof(float), MemCategory::HostCheckpoints);
  Buffer back = pinned.allocate(n * sizeof(float), MemCategory::HostCheckpoints);
  float* hp = static_cast<float*>(h.data());
  for (size_t i = 0; i < n; ++i) hp[i] = static_cast<float>(i) * 0.5f;
  cuda::Stream s;
  ZT_CUDA_CHECK(cudaMemcpyAsync(d.data(), h.data(), h.bytes(), cudaMemcpyHostToDevice, s.get()));
  ZT_CUDA_CHECK(cudaMemcpyAsync(back.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost, s.get()));
  s.synchronize();
  EXPECT_EQ(std::memcmp(back.data(), h.data(), h.bytes()), 0);
}

}  // namespace
}  // namespace zt
