#pragma once
// Device memory the host cannot touch. The staging backend (kernels/backend.h) keeps the CUDA
// backend's memory discipline on the CPU, but its "device" memory is host memory: a host
// dereference of a device pointer, which faults on a GPU, would pass there unnoticed. Memory of
// a ProtectedRegion is inaccessible (PROT_NONE) except while some DeviceAccess is alive: the
// backend holds one around each of its calls, a communicator around each operation on it (until
// an asynchronous one completes), the allocator around its zero fill. Anything else that reads
// or writes it faults (SIGSEGV), as it would on the device.
//
// Page protection belongs to the process, so the regions and the count of open accesses are
// process-wide: while one thread is inside an access every thread may touch the regions (a
// missed fault, never a false one).
#include <cstddef>
#include <memory>
#include <span>

#include "src/core/memory_pool.h"

namespace zt {

// An anonymous mapping of `bytes` (rounded up to pages), reserved without commit and
// inaccessible outside accesses.
class ProtectedRegion {
 public:
  explicit ProtectedRegion(size_t bytes);
  ~ProtectedRegion();
  ProtectedRegion(const ProtectedRegion&) = delete;
  ProtectedRegion& operator=(const ProtectedRegion&) = delete;

  std::span<std::byte> bytes() const { return {base_, size_}; }

 private:
  std::byte* base_;  // the mapping; unmapped by the destructor
  size_t size_;
};

// Opens every protected region for the host for its lifetime (nested and concurrent accesses
// count; the last one to end closes them). Inactive, and free, when no region exists.
class DeviceAccess {
 public:
  DeviceAccess();
  ~DeviceAccess();
  DeviceAccess(DeviceAccess&& o) noexcept : active_(o.active_) { o.active_ = false; }
  DeviceAccess& operator=(DeviceAccess&&) = delete;
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;

 private:
  bool active_;
};

// True while some region is open to the host (for tests of the discipline itself).
bool device_memory_open();

// Device memory for the staging backend: `capacity` bytes of one ProtectedRegion, handed out
// first-fit as SlabAllocator does (256-byte aligned, zero-filled).
std::unique_ptr<Allocator> make_protected_allocator(size_t capacity);

}  // namespace zt
