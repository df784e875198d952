#include "src/core/io_buffer.h"

#include <cstdint>

namespace zt {

IoBuffer::IoBuffer(MemoryPool& pool, size_t bytes, MemCategory category)
    : bytes_((bytes + kAlign - 1) / kAlign * kAlign) {
  raw_ = pool.allocate(bytes_ + kAlign, category);
  const auto at = reinterpret_cast<uintptr_t>(raw_.data());
  data_ = static_cast<char*>(raw_.data()) + ((kAlign - at % kAlign) % kAlign);
}

}  // namespace zt
