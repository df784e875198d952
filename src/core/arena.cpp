#include "src/core/arena.h"

namespace zt {

Tensor Arena::carve(Shape shape, DType dtype) {
  const size_t bytes = aligned(static_cast<size_t>(shape.numel()) * dtype_size(dtype));
  ZT_CHECK(used_ + bytes <= buffer_.bytes(), "arena full: {} used + {} asked > {} capacity", used_,
           bytes, buffer_.bytes());
  Tensor t(static_cast<char*>(buffer_.data()) + used_, shape, dtype, device_);
  used_ += bytes;
  return t;
}

}  // namespace zt
