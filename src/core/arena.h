#pragma once
// Arena: one contiguous allocation carved front to back (ZeRO-R's MD). Tensors with the same
// lifetime share an arena, so long-lived and short-lived memory never interleave.
#include <cstddef>

#include "src/core/memory_pool.h"

namespace zt {

class Arena {
 public:
  Arena() = default;
  Arena(MemoryPool& pool, size_t capacity, MemCategory category)
      : buffer_(pool.allocate(capacity, category)), device_(pool.device()) {}

  // The next `shape` elements of `dtype`, aligned to 64 bytes. Throws when the arena is full.
  Tensor carve(Shape shape, DType dtype);
  void reset() { used_ = 0; }
  size_t used() const { return used_; }
  size_t capacity() const { return buffer_.bytes(); }

  // How many bytes a sequence of carves needs; used to size an arena before creating it.
  static size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
  static constexpr size_t kAlign = 64;

 private:
  Buffer buffer_;
  Device device_ = Device::Cpu;
  size_t used_ = 0;
};

}  // namespace zt
