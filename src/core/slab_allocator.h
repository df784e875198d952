#pragma once
// SlabAllocator: a fixed-size device memory (e.g. --device-memory 32e9 for a 32 GB V100) reserved
// once and handed out first-fit from a free list that coalesces on free, like a caching device
// allocator. It makes fragmentation measurable: MemoryPool::fragmentation() is the largest free
// block over the free bytes — 1.0 when the free space is one piece, less when it is scattered
// and a large request can fail although enough bytes are free (the ZeRO paper's OOM with over 30%
// of memory free).
#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <span>

#include "src/core/memory_pool.h"

namespace zt {

class SlabAllocator final : public Allocator {
 public:
  explicit SlabAllocator(size_t capacity, Device device = Device::Cpu);
  // Over memory someone else owns (a ProtectedRegion), which must outlive the allocator; its
  // start must be 256-byte aligned.
  SlabAllocator(std::span<std::byte> region, Device device);
  SlabAllocator(const SlabAllocator&) = delete;
  SlabAllocator& operator=(const SlabAllocator&) = delete;

  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  Device device() const override { return device_; }
  FreeSpace free_space() const override;

  static constexpr size_t kAlign = 256;  // what cudaMalloc guarantees

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> owned_;  // the region, when the allocator reserved it
  char* base_ = nullptr;
  size_t capacity_;
  Device device_;
  std::map<size_t, size_t> free_;  // offset -> length, non-adjacent (coalesced)
};

}  // namespace zt
