#pragma once
// fp32 gradient regions the model accumulates a block's gradient into, when the kept gradient is
// not fp32 or not whole (half precision, ZeRO stages 2–3). Two slots: the tied embedding's
// gradient is open from the head's backward until the embedding's, while the layers' gradients
// open and close one at a time in between.
#include <array>
#include <cstdint>

#include "kernels/backend.h"
#include "src/core/memory_pool.h"

namespace zt {

class GradSlots {
 public:
  GradSlots() = default;
  // Two slots of `elems` fp32 each, category buffers, in ctx.pool().
  GradSlots(const DeviceContext& ctx, int64_t elems);
  // The slot of `block`; a block opened for the first time gets a free slot with its first
  // `zero_elems` elements zeroed.
  float* open(int block, int64_t zero_elems);
  void close(int block);

 private:
  struct Slot {
    Buffer buffer;
    int block = -1;
  };
  Backend* be_ = nullptr;
  std::array<Slot, 2> slots_;
};

}  // namespace zt
