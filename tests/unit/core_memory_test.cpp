#include <gtest/gtest.h>

#include "src/core/arena.h"
#include "src/core/memory_pool.h"

namespace zt {
namespace {

TEST(MemoryPool, CountsCurrentAndPeakPerCategory) {
  MemoryPool pool(make_host_allocator());
  {
    Buffer a = pool.allocate(1000, MemCategory::Params);
    Buffer b = pool.allocate(500, MemCategory::Grads);
    EXPECT_EQ(pool.current(MemCategory::Params), 1000u);
    EXPECT_EQ(pool.current(MemCategory::Grads), 500u);
    EXPECT_EQ(pool.total_current(), 1500u);
    {
      Buffer c = pool.allocate(4000, MemCategory::Buffers);
      EXPECT_EQ(pool.total_peak(), 5500u);
    }
    EXPECT_EQ(pool.current(MemCategory::Buffers), 0u);
    EXPECT_EQ(pool.peak(MemCategory::Buffers), 4000u);
    pool.reset_peaks();
    EXPECT_EQ(pool.peak(MemCategory::Buffers), 0u);
    EXPECT_EQ(pool.total_peak(), 1500u);
  }
  EXPECT_EQ(pool.total_current(), 0u);
}

TEST(MemoryPool, BufferMoveTransfersOwnership) {
  MemoryPool pool(make_host_allocator());
  Buffer a = pool.allocate(64, MemCategory::Activations);
  void* p = a.data();
  Buffer b = std::move(a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(pool.current(MemCategory::Activations), 64u);
  b.reset();
  EXPECT_EQ(pool.current(MemCategory::Activations), 0u);
}

TEST(MemoryPool, AllocationsAreZeroed) {
  MemoryPool pool(make_host_allocator());
  Buffer a = pool.allocate({1000}, DType::F32, MemCategory::Params);
  const float* f = a.view({1000}, DType::F32).f32();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(f[i], 0.0f);
}

TEST(Arena, CarvesAlignedInOrderAndRefusesOverflow) {
  MemoryPool pool(make_host_allocator());
  Arena arena(pool, 256, MemCategory::Checkpoints);
  Tensor a = arena.carve({3}, DType::F32);
  Tensor b = arena.carve({5}, DType::BF16);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
  EXPECT_EQ(static_cast<char*>(b.data()) - static_cast<char*>(a.data()), 64);
  EXPECT_EQ(arena.used(), 128u);
  EXPECT_THROW(arena.carve({100}, DType::F32), Error);
  arena.reset();
  EXPECT_EQ(arena.carve({3}, DType::F32).data(), a.data());
  EXPECT_EQ(pool.current(MemCategory::Checkpoints), 256u);
}

TEST(Tensor, SliceAndReshapeCheckBounds) {
  float data[12] = {};
  Tensor t(data, {3, 4}, DType::F32);
  EXPECT_EQ(t.stride(0), 4);
  EXPECT_EQ(t.slice(4, {2, 4}).f32(), data + 4);
  EXPECT_THROW(t.slice(8, {2, 4}), Error);
  EXPECT_THROW(t.reshape({5, 2}), Error);
  EXPECT_THROW(Tensor(data, {6}, DType::BF16).f32(), Error);
}

}  // namespace
}  // namespace zt
