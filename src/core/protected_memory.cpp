#include "src/core/protected_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "src/core/error.h"
#include "src/core/slab_allocator.h"

namespace zt {
namespace {

// The process's protected regions and its open accesses.
class Registry {
 public:
  static Registry& get() {
    static Registry r;
    return r;
  }
  bool any() const { return regions_count_.load(std::memory_order_acquire) > 0; }
  bool open() const {
    const std::lock_guard lock(mu_);
    return open_ > 0;
  }

  void add(std::span<std::byte> r) {
    const std::lock_guard lock(mu_);
    if (open_ > 0) protect(r, PROT_READ | PROT_WRITE);  // mapped closed; an access is open now
    regions_.push_back(r);
    regions_count_.fetch_add(1, std::memory_order_release);
  }
  void remove(std::byte* base) {
    const std::lock_guard lock(mu_);
    std::erase_if(regions_, [&](std::span<std::byte> r) { return r.data() == base; });
    regions_count_.fetch_sub(1, std::memory_order_release);
  }
  void enter() {
    const std::lock_guard lock(mu_);
    if (open_++ == 0)
      for (std::span<std::byte> r : regions_) protect(r, PROT_READ | PROT_WRITE);
  }
  void leave() {
    const std::lock_guard lock(mu_);
    if (--open_ == 0)
      for (std::span<std::byte> r : regions_) protect(r, PROT_NONE);
  }

 private:
  static void protect(std::span<std::byte> r, int prot) {
    if (mprotect(r.data(), r.size(), prot) != 0)
      throw Error(
          fmt::format("mprotect of {} bytes of device memory: {}", r.size(), std::strerror(errno)));
  }

  mutable std::mutex mu_;
  std::vector<std::span<std::byte>> regions_;
  std::atomic<int> regions_count_{0};
  int open_ = 0;
};

size_t page_size() {
  return static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

class ProtectedAllocator final : public Allocator {
 public:
  explicit ProtectedAllocator(size_t capacity)
      : region_(capacity), slab_(region_.bytes(), Device::Cpu) {}
  void* allocate(size_t bytes) override {
    const DeviceAccess access;  // the zero fill
    return slab_.allocate(bytes);
  }
  void deallocate(void* p, size_t bytes) override { slab_.deallocate(p, bytes); }
  Device device() const override { return Device::Cpu; }
  FreeSpace free_space() const override { return slab_.free_space(); }

 private:
  ProtectedRegion region_;  // before slab_, which hands it out
  SlabAllocator slab_;
};

}  // namespace

ProtectedRegion::ProtectedRegion(size_t bytes) {
  const size_t page = page_size();
  size_ = (bytes + page - 1) / page * page;
  void* p = mmap(nullptr, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw Error(fmt::format("reserving {} bytes of protected device memory: {}", size_,
                            std::strerror(errno)));
  base_ = static_cast<std::byte*>(p);
  Registry::get().add({base_, size_});
}

ProtectedRegion::~ProtectedRegion() {
  Registry::get().remove(base_);
  munmap(base_, size_);
}

DeviceAccess::DeviceAccess() : active_(Registry::get().any()) {
  if (active_) Registry::get().enter();
}

DeviceAccess::~DeviceAccess() {
  if (active_) Registry::get().leave();
}

bool device_memory_open() {
  return Registry::get().open();
}

std::unique_ptr<Allocator> make_protected_allocator(size_t capacity) {
  return std::make_unique<ProtectedAllocator>(capacity);
}

}  // namespace zt
