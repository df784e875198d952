#include "kernels/backend.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/kernel_backend.h"
#include "src/core/error.h"

namespace zt {
namespace {

// The CPU kernels (cpu::Kernels) behind the Backend interface, unchanged: the CPU backend's bits
// are those of the kernels themselves. Host memory is its device memory, so the moves are memcpy.
// `staging`: host_accessible() false (cpu_staging_backend()).
class CpuBackend final : public KernelBackend<cpu::Kernels, CpuBackend> {
 public:
  explicit CpuBackend(bool staging = false) : staging_(staging) {}
  Device device() const override { return Device::Cpu; }
  bool host_accessible() const override { return !staging_; }
  void* stream() const override { return nullptr; }
  cpu::Kernels::Exec exec() const { return {}; }

  void copy_to_device(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0 && dst != src) std::memcpy(dst, src, bytes);
  }
  void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
               size_t rows) override {
    for (size_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch,
                  static_cast<const char*>(src) + r * src_pitch, width);
  }
  void fill_zero(void* dst, size_t bytes) override {
    if (bytes > 0) std::memset(dst, 0, bytes);
  }
  void synchronize() override {}
  void offload(void* dst, const void* src, size_t bytes) override { side_copy(dst, src, bytes); }
  void fetch(void* dst, const void* src, size_t bytes) override { side_copy(dst, src, bytes); }
  void join_copies() override { run_side_copies(); }
  void wait_copies() override { run_side_copies(); }

 private:
  struct SideCopy {
    void* dst;
    const void* src;
    size_t bytes;
  };
  // The side stream's copies, deferred on the staging backend to the next join or wait: the
  // latest a GPU may run them. Locked: an update thread shares the backend (bind_thread).
  void side_copy(void* dst, const void* src, size_t bytes) {
    if (!staging_) {
      copy(dst, src, bytes);
      return;
    }
    const std::lock_guard lock(side_mutex_);
    side_.push_back({dst, src, bytes});
  }
  void run_side_copies() {
    if (!staging_) return;
    const std::lock_guard lock(side_mutex_);
    for (const SideCopy& c : side_) copy(c.dst, c.src, c.bytes);
    side_.clear();
  }

  bool staging_;
  std::mutex side_mutex_;
  std::vector<SideCopy> side_;
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
