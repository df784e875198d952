#include "src/core/slab_allocator.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "src/core/error.h"

namespace zt {
namespace {
size_t round_up(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}
}  // namespace

SlabAllocator::SlabAllocator(size_t capacity, Device device)
    : capacity_(round_up(capacity, kAlign)), device_(device) {
  owned_.reset(static_cast<char*>(std::aligned_alloc(kAlign, capacity_)));
  if (owned_ == nullptr) throw std::bad_alloc();
  base_ = owned_.get();
  free_.emplace(0, capacity_);
}

SlabAllocator::SlabAllocator(std::span<std::byte> region, Device device)
    : base_(reinterpret_cast<char*>(region.data())),
      capacity_(region.size() / kAlign * kAlign),
      device_(device) {
  ZT_CHECK(reinterpret_cast<uintptr_t>(base_) % kAlign == 0, "a slab region must be {}-aligned",
           kAlign);
  free_.emplace(0, capacity_);
}

void* SlabAllocator::allocate(size_t bytes) {
  const size_t need = round_up(bytes == 0 ? 1 : bytes, kAlign);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need) continue;
    const size_t offset = it->first, left = it->second - need;
    free_.erase(it);
    if (left > 0) free_.emplace(offset + need, left);
    std::memset(base_ + offset, 0, need);  // the same zeroed start as the host allocator
    return base_ + offset;
  }
  const FreeSpace f = free_space();
  throw Error(fmt::format(
      "out of device memory: {} bytes asked, {} free of {} but the largest free block is {} "
      "(fragmentation)",
      bytes, f.free_bytes, capacity_, f.largest_block));
}

void SlabAllocator::deallocate(void* p, size_t bytes) {
  size_t offset = static_cast<size_t>(static_cast<char*>(p) - base_);
  size_t len = round_up(bytes == 0 ? 1 : bytes, kAlign);
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + len == next->first) {  // merge with the block after
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {  // and with the block before
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += len;
      return;
    }
  }
  free_.emplace(offset, len);
}

Allocator::FreeSpace SlabAllocator::free_space() const {
  FreeSpace f;
  for (const auto& [offset, len] : free_) {
    f.free_bytes += len;
    if (len > f.largest_block) f.largest_block = len;
  }
  return f;
}

}  // namespace zt
