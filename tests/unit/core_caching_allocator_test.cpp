// The caching allocator's bookkeeping on host memory: the same code the CUDA backend runs over
// cudaMalloc / cudaHostAlloc slabs (tests/gpu/cuda_allocator_test.cpp repeats the key cases there).
#include "src/core/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace zt {
namespace {

constexpr size_t kA = CachingAllocator::kAlign;

// Hands out consecutive pieces of one arena, so two slabs can be adjacent in memory (the case
// where coalescing must stop at the slab boundary), with a byte limit to provoke out-of-memory.
struct ArenaSource final : SlabSource {
  explicit ArenaSource(size_t limit)
      : limit(limit), arena(static_cast<char*>(std::aligned_alloc(kA, limit)), &std::free) {}
  void* allocate(size_t bytes) override {
    ++calls;
    if (held == 0) used = 0;  // everything released: start from the front again
    if (used + bytes > limit) return nullptr;
    void* p = arena.get() + used;
    used += bytes;
    held += bytes;
    return p;
  }
  void release(void*, size_t bytes) noexcept override {
    held -= bytes;
    ++releases;
  }
  void zero(void* p, size_t bytes) override { std::memset(p, 0, bytes); }
  Device device() const override { return Device::Cpu; }
  std::string_view name() const override { return "test"; }

  size_t limit, used = 0, held = 0;
  int calls = 0, releases = 0;
  std::unique_ptr<char, decltype(&std::free)> arena;
};

struct Fixture {
  explicit Fixture(size_t limit, CachingOptions opts) {
    auto s = std::make_unique<ArenaSource>(limit);
    source = s.get();
    auto a = std::make_unique<CachingAllocator>(std::move(s), opts);
    alloc = a.get();
    pool = std::make_unique<MemoryPool>(std::move(a));
  }
  ArenaSource* source;
  CachingAllocator* alloc;
  std::unique_ptr<MemoryPool> pool;
};

CachingOptions growing(size_t slab) {
  return CachingOptions{0, slab};
}
CachingOptions fixed(size_t capacity) {
  return CachingOptions{capacity, 0};
}

TEST(CachingAllocator, FreedBlockIsReusedWithoutAskingTheSource) {
  Fixture f(64 << 20, growing(4 << 20));
  void* first = nullptr;
  {
    Buffer a = f.pool->allocate(1000, MemCategory::Params);
    first = a.data();
  }
  Buffer b = f.pool->allocate(1000, MemCategory::Params);
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(f.source->calls, 1);
  EXPECT_EQ(f.alloc->reserved_bytes(), size_t{4} << 20);
}

TEST(CachingAllocator, BestFitTakesTheSmallestBlockThatHolds) {
  Fixture f(64 << 20, growing(4 << 20));
  Buffer a = f.pool->allocate(4 * kA, MemCategory::Params);
  Buffer sep1 = f.pool->allocate(kA, MemCategory::Params);
  Buffer b = f.pool->allocate(kA, MemCategory::Params);
  Buffer sep2 = f.pool->allocate(kA, MemCategory::Params);
  void* small = b.data();
  a.reset();
  b.reset();
  Buffer c = f.pool->allocate(kA, MemCategory::Grads);
  EXPECT_EQ(c.data(), small);  // not the front of a's larger hole
}

TEST(CachingAllocator, CoalescesBackToOnePieceAndFragmentationOne) {
  Fixture f(64 << 20, growing(1 << 20));
  EXPECT_EQ(f.pool->fragmentation(), 1.0);
  Buffer a = f.pool->allocate(2 * kA, MemCategory::Params);
  Buffer b = f.pool->allocate(2 * kA, MemCategory::Buffers);
  Buffer c = f.pool->allocate(2 * kA, MemCategory::Params);
  const size_t slab = f.alloc->reserved_bytes();
  b.reset();  // a hole between a and c
  EXPECT_DOUBLE_EQ(f.pool->fragmentation(),
                   static_cast<double>(slab - 6 * kA) / static_cast<double>(slab - 4 * kA));
  a.reset();
  c.reset();  // hole + c + tail, then a: one piece again
  EXPECT_EQ(f.pool->fragmentation(), 1.0);
  EXPECT_EQ(f.alloc->free_space().largest_block, slab);
  EXPECT_EQ(f.alloc->free_space().free_bytes, slab);
}

TEST(CachingAllocator, NeverCoalescesAcrossAdjacentSlabs) {
  Fixture f(64 << 20, growing(2 << 20));
  Buffer a = f.pool->allocate(2 << 20, MemCategory::Params);  // fills slab 1 exactly
  Buffer b = f.pool->allocate(2 << 20, MemCategory::Params);  // slab 2, adjacent in the arena
  ASSERT_EQ(static_cast<char*>(b.data()), static_cast<char*>(a.data()) + (2 << 20));
  a.reset();
  b.reset();
  EXPECT_EQ(f.alloc->free_space().free_bytes, size_t{4} << 20);
  EXPECT_EQ(f.alloc->free_space().largest_block, size_t{2} << 20);
  EXPECT_DOUBLE_EQ(f.pool->fragmentation(), 0.5);
}

TEST(CachingAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  Fixture f(8 << 20, growing(4 << 20));
  { Buffer a = f.pool->allocate(3 << 20, MemCategory::Params); }  // 4 MiB slab, cached
  { Buffer b = f.pool->allocate(3 << 20, MemCategory::Params); }  // reuses it
  EXPECT_EQ(f.source->calls, 1);
  // 6 MiB does not fit the cached slab, and 4 + 6 > 8: the empty slab must go first.
  Buffer big = f.pool->allocate(6 << 20, MemCategory::Activations);
  EXPECT_EQ(f.source->releases, 1);
  EXPECT_EQ(f.alloc->slab_count(), 1u);
  try {
    Buffer more = f.pool->allocate(4 << 20, MemCategory::Activations);
    FAIL() << "the source is full";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of test memory"), std::string::npos) << e.what();
  }
}

TEST(CachingAllocator, FixedCapacityIsFirstFitAndRefusesClearly) {
  Fixture f(1 << 20, fixed(10 * kA));
  EXPECT_EQ(f.alloc->reserved_bytes(), 10 * kA);
  Buffer a = f.pool->allocate(2 * kA, MemCategory::Params);
  Buffer b = f.pool->allocate(2 * kA, MemCategory::Buffers);
  Buffer c = f.pool->allocate(2 * kA, MemCategory::Params);
  b.reset();
  EXPECT_DOUBLE_EQ(f.pool->fragmentation(), 4.0 / 6.0);  // as SlabAllocator
  Buffer d = f.pool->allocate(kA, MemCategory::Grads);
  EXPECT_EQ(d.data(), static_cast<char*>(a.data()) + 2 * kA);  // first fit: the hole, not the tail
  try {
    Buffer big = f.pool->allocate(11 * kA, MemCategory::Activations);
    FAIL() << "over capacity";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("fixed capacity"), std::string::npos) << w;
    EXPECT_NE(w.find("largest free block"), std::string::npos) << w;
    EXPECT_NE(w.find("--device-memory"), std::string::npos) << w;
  }
  EXPECT_EQ(f.source->calls, 1);  // never grows
}

TEST(CachingAllocator, FixedCapacityTheSourceCannotHoldFailsAtConstruction) {
  EXPECT_THROW(Fixture(1 << 20, fixed(2 << 20)), Error);
}

TEST(CachingAllocator, BlocksAreZeroedAndAligned) {
  Fixture f(16 << 20, growing(2 << 20));
  {
    Buffer a = f.pool->allocate(100, MemCategory::Params);
    static_cast<char*>(a.data())[5] = 7;
  }
  Buffer b = f.pool->allocate(100, MemCategory::Params);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kA, 0u);
  EXPECT_EQ(static_cast<char*>(b.data())[5], 0);
}

TEST(CachingAllocator, DoubleFreeAndForeignPointersAreCaught) {
  Fixture f(16 << 20, growing(2 << 20));
  void* p = f.alloc->allocate(kA);
  f.alloc->deallocate(p, kA);
  EXPECT_THROW(f.alloc->deallocate(p, kA), Error);
  int local = 0;
  EXPECT_THROW(f.alloc->deallocate(&local, kA), Error);
}

TEST(CachingAllocator, MemoryPoolCountsCategoriesAsOnTheHost) {
  Fixture f(64 << 20, growing(4 << 20));
  MemoryPool host(make_host_allocator());
  for (MemoryPool* p : {f.pool.get(), &host}) {
    Buffer a = p->allocate(1000, MemCategory::Params);
    Buffer b = p->allocate(300, MemCategory::Optimizer);
    { Buffer c = p->allocate(5000, MemCategory::Activations); }
    EXPECT_EQ(p->current(MemCategory::Params), 1000u);
    EXPECT_EQ(p->current(MemCategory::Optimizer), 300u);
    EXPECT_EQ(p->current(MemCategory::Activations), 0u);
    EXPECT_EQ(p->peak(MemCategory::Activations), 5000u);
    EXPECT_EQ(p->total_peak(), 6300u);
  }
}

}  // namespace
}  // namespace zt
