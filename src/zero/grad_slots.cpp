#include "src/zero/grad_slots.h"

#include <algorithm>

namespace zt {

GradSlots::GradSlots(MemoryPool& pool, int64_t elems) {
  for (auto& s : slots_) s.buffer = pool.allocate({elems}, DType::F32, MemCategory::Buffers);
}

float* GradSlots::open(int block, int64_t zero_elems) {
  for (auto& s : slots_)
    if (s.block == block) return static_cast<float*>(s.buffer.data());
  for (auto& s : slots_) {
    if (s.block >= 0) continue;
    ZT_CHECK(s.buffer.bytes() >= static_cast<size_t>(zero_elems) * 4, "gradient slot too small");
    s.block = block;
    auto* p = static_cast<float*>(s.buffer.data());
    std::fill_n(p, zero_elems, 0.0f);
    return p;
  }
  throw Error("more than two gradient blocks open at once");
}

void GradSlots::close(int block) {
  for (auto& s : slots_)
    if (s.block == block) s.block = -1;
}

}  // namespace zt
