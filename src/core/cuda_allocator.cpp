#include "src/core/cuda_allocator.h"

#include <cstring>

#include "src/core/cuda_check.h"

namespace zt {
namespace {

// cudaErrorMemoryAllocation is the one failure the caching allocator recovers from (by releasing
// its cache and retrying); it is not sticky, but cleared so the next check does not see it.
bool out_of_memory(cudaError_t rc) {
  if (rc != cudaErrorMemoryAllocation) return false;
  (void)cudaGetLastError();
  return true;
}

class DeviceSource final : public SlabSource {
 public:
  DeviceSource(cudaStream_t stream, bool async) : stream_(stream), async_(async) {}
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    const cudaError_t rc = cudaMalloc(&p, bytes);
    if (out_of_memory(rc)) return nullptr;
    ZT_CUDA_CHECK(rc);
    return p;
  }
  void release(void* p, size_t) noexcept override { (void)cudaFree(p); }
  void zero(void* p, size_t bytes) override {
    ZT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_));
    if (!async_) ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  Device device() const override { return Device::Cuda; }
  std::string_view name() const override { return "device"; }

 private:
  cudaStream_t stream_;
  bool async_;
};

class PinnedSource final : public SlabSource {
 public:
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    const cudaError_t rc = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
    if (out_of_memory(rc)) return nullptr;
    ZT_CUDA_CHECK(rc);
    return p;
  }
  void release(void* p, size_t) noexcept override { (void)cudaFreeHost(p); }
  void zero(void* p, size_t bytes) override { std::memset(p, 0, bytes); }
  Device device() const override { return Device::Cpu; }
  std::string_view name() const override { return "pinned host"; }
};

}  // namespace

std::unique_ptr<CachingAllocator> make_cuda_allocator(const CudaAllocatorOptions& opts) {
  return std::make_unique<CachingAllocator>(
      std::make_unique<DeviceSource>(opts.stream, opts.async_zero_fill),
      CachingOptions{opts.fixed_capacity, opts.slab_bytes});
}

std::unique_ptr<CachingAllocator> make_pinned_allocator(size_t slab_bytes) {
  return std::make_unique<CachingAllocator>(std::make_unique<PinnedSource>(),
                                            CachingOptions{0, slab_bytes});
}

}  // namespace zt
