#include "src/zero/grad_staging.h"

#include <algorithm>

namespace zt {

GradStaging::GradStaging(const DeviceContext& ctx, int64_t elems) : be_(&ctx.backend()) {
  for (auto& s : slots_) s.buffer = ctx.pool().allocate({elems}, DType::F32, MemCategory::Buffers);
}

float* GradStaging::open(const Span& s) {
  for (auto& slot : slots_) {
    if (slot.open) continue;
    ZT_CHECK(slot.buffer.bytes() >= static_cast<size_t>(s.len) * 4,
             "gradient span of {} elements exceeds the staging slot", s.len);
    slot.span = s;
    slot.open = true;
    auto* p = static_cast<float*>(slot.buffer.data());
    be_->fill_zero(p, static_cast<size_t>(s.len) * 4);
    return p;
  }
  throw Error("more than two gradient spans open at once");
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
