#include "src/core/memory_pool.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace zt {

std::string_view mem_category_name(MemCategory c) {
  switch (c) {
    case MemCategory::Params:
      return "params";
    case MemCategory::Grads:
      return "grads";
    case MemCategory::Optimizer:
      return "optimizer";
    case MemCategory::Activations:
      return "activations";
    case MemCategory::Checkpoints:
      return "checkpoints";
    case MemCategory::HostCheckpoints:
      return "host_checkpoints";
    case MemCategory::Buffers:
      return "buffers";
    case MemCategory::KvCache:
      return "kv_cache";
    case MemCategory::HostSnapshot:
      return "host_snapshot";
    case MemCategory::HostOptimizer:
      return "host_optimizer";
    case MemCategory::NvmeBuffers:
      return "nvme_buffers";
    case MemCategory::HostParams:
      return "host_params";
    case MemCategory::HostGrads:
      return "host_grads";
    case MemCategory::kCount:
      break;
  }
  return "?";
}

namespace {

class HostAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    constexpr size_t kAlign = 64;  // a cache line, and enough for AVX-512 loads
    const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, rounded);  // touch every page now, not in the first step
    return p;
  }
  void deallocate(void* p, size_t) override { std::free(p); }
  Device device() const override { return Device::Cpu; }
};

}  // namespace

std::unique_ptr<Allocator> make_host_allocator() {
  return std::make_unique<HostAllocator>();
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    pool_ = o.pool_;
    data_ = o.data_;
    bytes_ = o.bytes_;
    category_ = o.category_;
    o.pool_ = nullptr;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (pool_ != nullptr && data_ != nullptr) pool_->release(data_, bytes_, category_);
  pool_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

Tensor Buffer::view(Shape shape, DType dtype) const {
  ZT_CHECK(static_cast<size_t>(shape.numel()) * dtype_size(dtype) <= bytes_,
           "view {} of {} exceeds buffer of {} bytes", shape.str(), dtype_name(dtype), bytes_);
  return Tensor(data_, shape, dtype, pool_ ? pool_->device() : Device::Cpu);
}

MemoryPool::MemoryPool(std::unique_ptr<Allocator> allocator) : allocator_(std::move(allocator)) {}

Buffer MemoryPool::allocate(size_t bytes, MemCategory category) {
  void* p = allocator_->allocate(bytes);
  const auto c = static_cast<size_t>(category);
  counters_.current[c] += bytes;
  counters_.total_current += bytes;
  if (counters_.current[c] > counters_.peak[c]) counters_.peak[c] = counters_.current[c];
  if (counters_.total_current > counters_.total_peak)
    counters_.total_peak = counters_.total_current;
  return Buffer(this, p, bytes, category);
}

void MemoryPool::release(void* p, size_t bytes, MemCategory category) {
  allocator_->deallocate(p, bytes);
  const auto c = static_cast<size_t>(category);
  counters_.current[c] -= bytes;
  counters_.total_current -= bytes;
}

double MemoryPool::fragmentation() const {
  const Allocator::FreeSpace f = allocator_->free_space();
  if (f.free_bytes == 0) return 1.0;
  return static_cast<double>(f.largest_block) / static_cast<double>(f.free_bytes);
}

void MemoryPool::reset_peaks() {
  counters_.peak = counters_.current;
  counters_.total_peak = counters_.total_current;
}

void peak_report(const MemoryPool& device, const MemoryPool& host,
                 double (&out)[kNumMemCategories + 2]) {
  for (size_t c = 0; c < kNumMemCategories; ++c)
    out[c] = static_cast<double>(device.counters().peak[c]);
  out[kNumMemCategories] = static_cast<double>(device.total_peak());
  if (&host != &device)
    for (const MemCategory c :
         {MemCategory::HostCheckpoints, MemCategory::HostSnapshot, MemCategory::HostOptimizer,
          MemCategory::NvmeBuffers, MemCategory::HostParams, MemCategory::HostGrads})
      out[static_cast<size_t>(c)] += static_cast<double>(host.peak(c));
  out[kNumMemCategories + 1] = 1.0 - device.fragmentation();
}

}  // namespace zt
