#include "src/core/caching_allocator.h"

#include <algorithm>
#include <iterator>

#include "src/core/error.h"

namespace zt {

CachingAllocator::CachingAllocator(std::unique_ptr<SlabSource> source, CachingOptions opts)
    : source_(std::move(source)), opts_(opts) {
  ZT_CHECK(source_ != nullptr, "CachingAllocator without a slab source");
  if (fixed()) {
    // The fixed region is reserved before anything else, so a --device-memory the device
    // cannot hold fails at startup, not in the middle of a step.
    const size_t cap = rounded(opts_.fixed_capacity);
    if (!add_slab(cap))
      throw Error(fmt::format(
          "cannot reserve {} bytes of {} memory for the fixed-capacity allocator; lower "
          "--device-memory",
          cap, source_->name()));
  }
}

bool CachingAllocator::add_slab(size_t bytes) {
  char* p = static_cast<char*>(source_->allocate(bytes));
  if (p == nullptr) return false;
  ++source_calls_;
  const Addr a = reinterpret_cast<Addr>(p);
  slabs_.emplace(a,
                 Slab{std::unique_ptr<char, SlabFree>(p, SlabFree{source_.get(), bytes}), bytes});
  reserved_ += bytes;
  insert_free(a, bytes);
  return true;
}

const CachingAllocator::Slab& CachingAllocator::slab_of(Addr a) const {
  auto it = slabs_.upper_bound(a);
  ZT_CHECK(it != slabs_.begin(), "pointer {:#x} was not allocated by this {} allocator", a,
           source_->name());
  --it;
  ZT_CHECK(a < it->first + it->second.bytes, "pointer {:#x} was not allocated by this {} allocator",
           a, source_->name());
  return it->second;
}

void CachingAllocator::insert_free(Addr a, size_t len) {
  free_.emplace(a, len);
  by_size_.emplace(len, a);
  free_bytes_ += len;
}

std::map<CachingAllocator::Addr, size_t>::iterator CachingAllocator::erase_free(
    std::map<Addr, size_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  free_bytes_ -= it->second;
  return free_.erase(it);
}

std::map<CachingAllocator::Addr, size_t>::iterator CachingAllocator::find_block(size_t need) {
  if (fixed()) {  // first fit: long-lived blocks pack at the front, like SlabAllocator
    return std::find_if(free_.begin(), free_.end(),
                        [&](const auto& b) { return b.second >= need; });
  }
  const auto best = by_size_.lower_bound({need, 0});
  return best == by_size_.end() ? free_.end() : free_.find(best->second);
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t need = rounded(bytes);
  auto it = find_block(need);
  if (it == free_.end() && !fixed()) {
    const size_t page = (need + kSlabRound - 1) / kSlabRound * kSlabRound;
    const size_t slab = std::max(page, opts_.slab_bytes);
    // Out of memory: give the cache back and retry, then try a slab of just this request.
    const bool grown = add_slab(slab) || (release_cached() > 0 && add_slab(slab)) ||
                       (slab > page && add_slab(page));
    if (grown) it = find_block(need);
  }
  if (it == free_.end()) out_of_memory(bytes);
  const Addr a = it->first;
  const size_t left = it->second - need;
  erase_free(it);
  if (left > 0) insert_free(a + need, left);
  void* p = reinterpret_cast<void*>(a);
  source_->zero(p, need);  // the same zeroed start as the host allocator
  return p;
}

void CachingAllocator::deallocate(void* p, size_t bytes) {
  if (p == nullptr) return;
  Addr a = reinterpret_cast<Addr>(p);
  size_t len = rounded(bytes);
  const Slab& slab = slab_of(a);
  const Addr lo = reinterpret_cast<Addr>(slab.mem.get()), hi = lo + slab.bytes;
  ZT_CHECK(a + len <= hi, "block [{:#x}, +{}) freed past the end of its slab", a, len);
  auto next = free_.lower_bound(a);
  ZT_CHECK(next == free_.end() || next->first >= a + len, "block {:#x} freed twice", a);
  if (next != free_.end() && next->first == a + len && next->first < hi) {  // same slab
    len += next->second;
    next = erase_free(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    ZT_CHECK(prev->first + prev->second <= a, "block {:#x} freed twice", a);
    if (prev->first >= lo && prev->first + prev->second == a) {
      a = prev->first;
      len += prev->second;
      erase_free(prev);
    }
  }
  insert_free(a, len);
}

Allocator::FreeSpace CachingAllocator::free_space() const {
  FreeSpace f;
  f.free_bytes = free_bytes_;
  f.largest_block = by_size_.empty() ? 0 : by_size_.rbegin()->first;
  return f;
}

size_t CachingAllocator::release_cached() {
  if (fixed()) return 0;  // the fixed region is the whole point: never given back
  size_t released = 0;
  for (auto it = slabs_.begin(); it != slabs_.end();) {
    auto f = free_.find(it->first);
    if (f == free_.end() || f->second != it->second.bytes) {
      ++it;
      continue;
    }
    erase_free(f);
    released += it->second.bytes;
    reserved_ -= it->second.bytes;
    it = slabs_.erase(it);  // the deleter returns it to the source
  }
  return released;
}

void CachingAllocator::out_of_memory(size_t bytes) const {
  const FreeSpace f = free_space();
  throw Error(fmt::format(
      "out of {} memory: {} bytes asked; {} bytes reserved in {} slab(s){}, {} of them free but "
      "the largest free block is {} (fragmentation {:.2f}); {}",
      source_->name(), bytes, reserved_, slabs_.size(), fixed() ? " (fixed capacity)" : "",
      f.free_bytes, f.largest_block,
      f.free_bytes ? static_cast<double>(f.largest_block) / static_cast<double>(f.free_bytes) : 1.0,
      fixed() ? "raise --device-memory or shrink the model, batch or buckets"
              : "the device is full: shrink the model, batch or buckets, or use a higher ZeRO "
                "stage"));
}

}  // namespace zt
