#include "kernels/backend.h"

#include <cstring>

#include "kernels/cpu/ops.h"
#include "kernels/deferred_copies.h"
#include "kernels/kernel_backend.h"
#include "src/core/error.h"
#include "src/core/protected_memory.h"

namespace zt {
namespace {

// The CPU kernels (cpu::Kernels) behind the Backend interface, unchanged: the CPU backend's bits
// are those of the kernels themselves. Host memory is its device memory, so the moves are memcpy.
// `staging` (cpu_staging_backend()): host_accessible() false, every call inside a DeviceAccess
// (device memory from make_staging_device_allocator() is closed to the host outside them), and
// the side copies deferred and poisoned (DeferredCopies).
class CpuBackend final : public KernelBackend<cpu::Kernels, CpuBackend> {
 public:
  explicit CpuBackend(bool staging = false) : staging_(staging) {}
  Device device() const override { return Device::Cpu; }
  bool host_accessible() const override { return !staging_; }
  void* stream() const override { return nullptr; }
  cpu::Kernels::Exec exec() const { return {}; }
  // Inactive (and free) when no protected region exists, as on the CPU backend.
  DeviceAccess device_access() const { return {}; }

  void copy_to_device(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override {
    const DeviceAccess access;
    if (bytes > 0 && dst != src) std::memcpy(dst, src, bytes);
  }
  void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
               size_t rows) override {
    const DeviceAccess access;
    for (size_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch,
                  static_cast<const char*>(src) + r * src_pitch, width);
  }
  void fill_zero(void* dst, size_t bytes) override {
    const DeviceAccess access;
    if (bytes > 0) std::memset(dst, 0, bytes);
  }
  void synchronize() override {}
  void offload(void* dst, const void* src, size_t bytes) override {
    if (!staging_) return copy(dst, src, bytes);
    const DeviceAccess access;
    side_.offload(dst, src, bytes);
  }
  void fetch(void* dst, const void* src, size_t bytes) override {
    if (!staging_) return copy(dst, src, bytes);
    const DeviceAccess access;
    side_.fetch(dst, src, bytes);
  }
  void join_copies() override {
    if (!staging_) return;
    const DeviceAccess access;
    side_.join();
  }
  void wait_copies() override {
    if (!staging_) return;
    const DeviceAccess access;
    side_.wait();
  }

 private:
  bool staging_;
  DeferredCopies side_;
};

}  // namespace

SideCopyGuard::~SideCopyGuard() {
  if (be_ == nullptr) return;
  try {
    be_->wait_copies();
  } catch (const Error&) {  // the run is ending already
  }
}

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

Backend& cpu_staging_backend() {
  static CpuBackend backend(true);
  return backend;
}

std::unique_ptr<Allocator> make_staging_device_allocator(size_t capacity) {
  return make_protected_allocator(capacity);
}

DeviceContext::DeviceContext(MemoryPool& pool)
    : backend_(&cpu_backend()), pool_(&pool), host_(&pool) {
  ZT_CHECK(pool.device() == Device::Cpu,
           "a {} memory pool needs its backend: pass a DeviceContext with the CUDA backend",
           device_name(pool.device()));
}

DeviceContext::DeviceContext(Backend& backend, MemoryPool& pool, MemoryPool& host)
    : backend_(&backend), pool_(&pool), host_(&host) {
  ZT_CHECK(pool.device() == backend.device(), "a {} memory pool given to the {} backend",
           device_name(pool.device()), device_name(backend.device()));
}

}  // namespace zt
