#pragma once
// A host buffer for O_DIRECT file I/O: it starts on a 4096-byte boundary and spans whole 4096-byte
// blocks. The bytes come from a MemoryPool like every other byte, counted in their category
// (NvmeBuffers by default); the pools guarantee less alignment (64 or 256 bytes, memory_pool.h),
// so the buffer takes kAlign more bytes than it spans and starts at the first aligned byte.
#include <cstddef>
#include <utility>

#include "src/core/memory_pool.h"

namespace zt {

class IoBuffer {
 public:
  static constexpr size_t kAlign = 4096;

  IoBuffer() = default;
  // `bytes` rounded up to a multiple of kAlign, zero-filled (the pool's allocations are).
  IoBuffer(MemoryPool& pool, size_t bytes, MemCategory category = MemCategory::NvmeBuffers);
  IoBuffer(IoBuffer&& o) noexcept
      : raw_(std::move(o.raw_)),
        data_(std::exchange(o.data_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)) {}
  IoBuffer& operator=(IoBuffer&& o) noexcept {
    raw_ = std::move(o.raw_);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    return *this;
  }

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  Buffer raw_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace zt
