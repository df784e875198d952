#include <gtest/gtest.h>

#include <memory>

#include "src/core/memory_pool.h"
#include "src/core/slab_allocator.h"

namespace zt {
namespace {

constexpr size_t kA = SlabAllocator::kAlign;

TEST(SlabAllocator, HolesFragmentAndCoalescingHeals) {
  MemoryPool pool(std::make_unique<SlabAllocator>(10 * kA));
  EXPECT_EQ(pool.fragmentation(), 1.0);
  Buffer a = pool.allocate(2 * kA, MemCategory::Params);
  Buffer b = pool.allocate(2 * kA, MemCategory::Buffers);
  Buffer c = pool.allocate(2 * kA, MemCategory::Params);
  EXPECT_EQ(pool.fragmentation(), 1.0);  // free space: the 4-block tail
  b.reset();                             // a 2-block hole between a and c
  EXPECT_DOUBLE_EQ(pool.fragmentation(), 4.0 / 6.0);
  // 5 blocks are free but not in one piece: the request fails and says why.
  try {
    Buffer big = pool.allocate(5 * kA, MemCategory::Activations);
    FAIL() << "allocation should not fit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("largest free block"), std::string::npos);
  }
  c.reset();  // hole + c + tail coalesce
  EXPECT_EQ(pool.fragmentation(), 1.0);
  Buffer big = pool.allocate(8 * kA, MemCategory::Activations);
  EXPECT_EQ(static_cast<char*>(big.data()) - static_cast<char*>(a.data()),
            static_cast<ptrdiff_t>(2 * kA));
}

TEST(SlabAllocator, AllocationsAreZeroedAndAligned) {
  MemoryPool pool(std::make_unique<SlabAllocator>(4 * kA));
  {
    Buffer a = pool.allocate(100, MemCategory::Params);
    static_cast<char*>(a.data())[5] = 7;
  }
  Buffer b = pool.allocate(100, MemCategory::Params);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kA, 0u);
  EXPECT_EQ(static_cast<char*>(b.data())[5], 0);
}

}  // namespace
}  // namespace zt
