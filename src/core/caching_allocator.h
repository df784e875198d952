#pragma once
// CachingAllocator: an Allocator over large slabs taken from a SlabSource (cudaMalloc,
// cudaHostAlloc, or host memory in the unit tests). A freed block goes back to a cache, not to the
// source: a training loop that frees and reallocates the same sizes every step asks the source only
// in its first step (cudaMalloc / cudaFree synchronise the device and cost milliseconds).
//
// Two modes:
//   growing (fixed_capacity == 0): best fit over all cached free blocks (smallest block that
//     holds the request, lowest address on ties, so reuse is deterministic); a request no block
//     holds gets a new slab of max(request rounded to 2 MiB, slab_bytes). When the source is out
//     of memory, the fully free slabs go back to it and the request is retried once.
//   fixed (fixed_capacity > 0): one slab of exactly that many bytes reserved at construction
//     (--device-memory; ZeRO-R's contiguous memory), first fit like SlabAllocator, never grows: a
//     request no free block holds throws, naming the free bytes and the largest free block.
// In both, a freed block coalesces with its free neighbours inside its slab (never across slabs:
// two cudaMalloc results are separate allocations even where adjacent), and free_space() reports
// the cached free bytes and the largest free block, so MemoryPool::fragmentation() means the same
// as with SlabAllocator. Every block handed out is zeroed by the source first.
// Not thread-safe, like MemoryPool: one thread allocates.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <utility>

#include "src/core/memory_pool.h"

namespace zt {

// Where slabs come from.
class SlabSource {
 public:
  virtual ~SlabSource() = default;
  // nullptr when out of memory (the allocator then releases cached slabs and retries); any other
  // failure throws.
  virtual void* allocate(size_t bytes) = 0;
  // Runs in destructors: reports nothing, throws nothing.
  virtual void release(void* p, size_t bytes) noexcept = 0;
  // Zeroes a block before it is handed out.
  virtual void zero(void* p, size_t bytes) = 0;
  virtual Device device() const = 0;
  // "device", "pinned host": for error messages.
  virtual std::string_view name() const = 0;
};

struct CachingOptions {
  size_t fixed_capacity = 0;        // > 0: one slab of this size, first fit, never grows
  size_t slab_bytes = 64ull << 20;  // growing mode: the smallest new slab
};

class CachingAllocator final : public Allocator {
 public:
  static constexpr size_t kAlign = 256;             // what cudaMalloc guarantees
  static constexpr size_t kSlabRound = 2ull << 20;  // slab sizes: whole 2 MiB pages

  CachingAllocator(std::unique_ptr<SlabSource> source, CachingOptions opts = {});
  ~CachingAllocator() override = default;  // slabs return to the source
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  Device device() const override { return source_->device(); }
  FreeSpace free_space() const override;

  bool fixed() const { return opts_.fixed_capacity > 0; }
  size_t reserved_bytes() const { return reserved_; }  // held from the source
  size_t slab_count() const { return slabs_.size(); }
  size_t source_allocations() const { return source_calls_; }  // slabs ever taken
  // Returns every fully free slab to the source (growing mode); the bytes returned.
  size_t release_cached();

  static size_t rounded(size_t bytes) {
    return (bytes == 0 ? 1 : bytes + kAlign - 1) / kAlign * kAlign;
  }

 private:
  struct SlabFree {
    SlabSource* source;
    size_t bytes;
    void operator()(char* p) const noexcept { source->release(p, bytes); }
  };
  struct Slab {
    std::unique_ptr<char, SlabFree> mem;
    size_t bytes = 0;
  };
  using Addr = uintptr_t;

  bool add_slab(size_t bytes);
  const Slab& slab_of(Addr a) const;
  // The free block a request of `need` bytes is carved from; free_.end() when none holds it.
  std::map<Addr, size_t>::iterator find_block(size_t need);
  void insert_free(Addr a, size_t len);
  std::map<Addr, size_t>::iterator erase_free(std::map<Addr, size_t>::iterator it);
  [[noreturn]] void out_of_memory(size_t bytes) const;

  std::unique_ptr<SlabSource> source_;  // declared first: outlives the slabs
  CachingOptions opts_;
  std::map<Addr, Slab> slabs_;                 // by base address
  std::map<Addr, size_t> free_;                // address -> length, coalesced within a slab
  std::set<std::pair<size_t, Addr>> by_size_;  // the same blocks by (length, address)
  size_t free_bytes_ = 0;
  size_t reserved_ = 0;
  size_t source_calls_ = 0;
};

}  // namespace zt
