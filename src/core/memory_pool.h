#pragma once
// MemoryPool is the only way a device byte is allocated. Each allocation carries a category so
// memory reports (metrics, ZeRO's memory tests, the planner's check) read counters, not formulas.
#include <array>
#include <cstddef>
#include <memory>
#include <string_view>

#include "src/core/dtype.h"
#include "src/core/tensor.h"

namespace zt {

enum class MemCategory : uint8_t {
  Params,           // working (model-precision) parameters resident on this rank
  Grads,            // gradients kept on this rank
  Optimizer,        // fp32 master parameters and Adam moments
  Activations,      // tensors saved for backward and their workspace
  Checkpoints,      // activation checkpoints on the device
  HostCheckpoints,  // activation checkpoints offloaded to host memory
  Buffers,          // communication buckets, gathered parameters, staging, scratch
  KvCache,          // generation: the key/value cache and the decoder's workspace
  HostSnapshot,     // --async-save: the copy of a checkpoint's states its background write reads
  HostOptimizer,    // --offload-optimizer cpu: fp32 master parameters and Adam moments on the host
  NvmeBuffers,      // host buffers the NVMe tier reads into and writes from (swap staging)
  HostParams,       // --offload-param cpu: stage 3's own shard of the working parameters
  HostGrads,        // optimizer offloaded from a device of its own, stages 2-3: gradient shard
  kCount
};
constexpr size_t kNumMemCategories = static_cast<size_t>(MemCategory::kCount);
std::string_view mem_category_name(MemCategory c);

// Where bytes come from: the CPU backend uses aligned host memory; the CUDA backend a caching
// device allocator. Allocations are zero-filled so every run starts from the same bits.
// Alignment: the host allocator guarantees 64 bytes, SlabAllocator and CachingAllocator 256 (what
// cudaMalloc gives). Buffers for O_DIRECT file I/O need 4096: IoBuffer (src/core/io_buffer.h)
// takes them from any pool and aligns them itself.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p, size_t bytes) = 0;
  virtual Device device() const = 0;
  // Free bytes and the largest free block, for allocators that manage a fixed region; the host
  // allocator (plain malloc) reports nothing.
  struct FreeSpace {
    size_t free_bytes = 0;
    size_t largest_block = 0;
  };
  virtual FreeSpace free_space() const { return {}; }
};
std::unique_ptr<Allocator> make_host_allocator();

struct MemCounters {
  std::array<size_t, kNumMemCategories> current{};
  std::array<size_t, kNumMemCategories> peak{};
  size_t total_current = 0;
  size_t total_peak = 0;
};

class MemoryPool;

// Buffer owns one allocation and returns it to its pool when destroyed. Move-only.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  void reset();
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  MemCategory category() const { return category_; }
  // A view of the whole buffer (or a prefix) as a tensor.
  Tensor view(Shape shape, DType dtype) const;

 private:
  friend class MemoryPool;
  Buffer(MemoryPool* pool, void* data, size_t bytes, MemCategory c)
      : pool_(pool), data_(data), bytes_(bytes), category_(c) {}
  MemoryPool* pool_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  MemCategory category_ = MemCategory::Buffers;
};

class MemoryPool {
 public:
  explicit MemoryPool(std::unique_ptr<Allocator> allocator);
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  Buffer allocate(size_t bytes, MemCategory category);
  Buffer allocate(Shape shape, DType dtype, MemCategory category) {
    return allocate(static_cast<size_t>(shape.numel()) * dtype_size(dtype), category);
  }

  const MemCounters& counters() const { return counters_; }
  size_t current(MemCategory c) const { return counters_.current[static_cast<size_t>(c)]; }
  size_t peak(MemCategory c) const { return counters_.peak[static_cast<size_t>(c)]; }
  size_t total_current() const { return counters_.total_current; }
  size_t total_peak() const { return counters_.total_peak; }
  // Starts a new measurement window: every peak becomes the current value.
  void reset_peaks();
  Device device() const { return allocator_->device(); }
  // Largest free block over free bytes of the allocator's region (1.0: the free space is one
  // piece); 1.0 for allocators without a fixed region.
  double fragmentation() const;

 private:
  friend class Buffer;
  void release(void* p, size_t bytes, MemCategory c);
  std::unique_ptr<Allocator> allocator_;
  MemCounters counters_;
};

// A step's memory as one rank reports it, into out[kNumMemCategories + 2]: each category's peak
// in `device`, the device total, and 1 - its fragmentation (a maximum over ranks of each is the
// worst rank). Where `host` is a pool of its own (CUDA), its categories that hold what the run
// keeps off the device (offloaded checkpoints, optimizer states, parameters and gradients, the
// --async-save snapshot, the NVMe tier's staging) are added: the device total excludes them.
void peak_report(const MemoryPool& device, const MemoryPool& host,
                 double (&out)[kNumMemCategories + 2]);

}  // namespace zt
