#include "src/zero/grad_staging.h"

#include <algorithm>
#include <array>

namespace zt {

namespace {

// Elements of the two slots: the longest span, and the vector slot (at most that).
std::array<int64_t, GradStaging::kSlots> slot_elems(const ParamLayout& layout, int64_t max_span) {
  const int64_t longest = longest_chunk(layout, max_span);
  int64_t vector = GradStaging::kVectorSlotElems;
  for (const auto& p : layout.params())
    if (p.shape.rank() < 2) vector = std::max(vector, p.numel());
  return {longest, std::min(vector, longest)};
}

}  // namespace

GradStaging::GradStaging(const DeviceContext& ctx, const ParamLayout& layout, int64_t max_span)
    : be_(&ctx.backend()) {
  const auto elems = slot_elems(layout, max_span);
  for (size_t i = 0; i < slots_.size(); ++i)
    slots_[i].buffer = ctx.pool().allocate({elems[i]}, DType::F32, MemCategory::Buffers);
}

size_t GradStaging::bytes(const ParamLayout& layout, int64_t max_span) {
  size_t b = 0;
  for (int64_t e : slot_elems(layout, max_span)) b += static_cast<size_t>(e) * 4;
  return b;
}

float* GradStaging::open(const Span& s) {
  const size_t need = static_cast<size_t>(s.len) * 4;
  Slot* best = nullptr;
  bool any_free = false;
  for (auto& slot : slots_) {
    if (slot.open) continue;
    any_free = true;
    if (slot.buffer.bytes() >= need &&
        (best == nullptr || slot.buffer.bytes() < best->buffer.bytes()))
      best = &slot;
  }
  if (!any_free) throw Error("more than two gradient spans open at once");
  ZT_CHECK(best != nullptr,
           "gradient span of {} elements fits no free staging slot (at most one span of a matrix "
           "may be open at a time)",
           s.len);
  best->span = s;
  best->open = true;
  auto* p = static_cast<float*>(best->buffer.data());
  be_->fill_zero(p, need);
  return p;
}

float* GradStaging::find(const Span& s) const {
  for (const auto& slot : slots_)
    if (slot.open && slot.span.block == s.block && slot.span.offset == s.offset)
      return static_cast<float*>(slot.buffer.data());
  throw Error("gradient span not open");
}

void GradStaging::close(const Span& s) {
  for (auto& slot : slots_)
    if (slot.open && slot.span.block == s.block && slot.span.offset == s.offset) slot.open = false;
}

int64_t longest_chunk(const ParamLayout& layout, int64_t max_span) {
  // The bound the flag allows (a longer row is one chunk), capped by the largest parameter: the
  // same for any model whose parameters fill a span.
  int64_t longest_row = 0, largest = 0;
  for (const auto& p : layout.params()) {
    longest_row = std::max(longest_row, p.row_len());
    largest = std::max(largest, p.numel());
  }
  return std::min(std::max(max_span, longest_row), largest);
}

}  // namespace zt
