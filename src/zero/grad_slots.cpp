#include "src/zero/grad_slots.h"

namespace zt {

GradSlots::GradSlots(const DeviceContext& ctx, int64_t elems) : be_(&ctx.backend()) {
  for (auto& s : slots_) s.buffer = ctx.pool().allocate({elems}, DType::F32, MemCategory::Buffers);
}

float* GradSlots::open(int block, int64_t zero_elems) {
  for (auto& s : slots_)
    if (s.block == block) return static_cast<float*>(s.buffer.data());
  for (auto& s : slots_) {
    if (s.block >= 0) continue;
    ZT_CHECK(s.buffer.bytes() >= static_cast<size_t>(zero_elems) * 4, "gradient slot too small");
    s.block = block;
    auto* p = static_cast<float*>(s.buffer.data());
    be_->fill_zero(p, static_cast<size_t>(zero_elems) * 4);
    return p;
  }
  throw Error("more than two gradient blocks open at once");
}

void GradSlots::close(int block) {
  for (auto& s : slots_)
    if (s.block == block) s.block = -1;
}

}  // namespace zt
