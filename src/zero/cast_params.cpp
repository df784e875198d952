#include "src/zero/cast_params.h"

#include <algorithm>

#include "src/model/param_ref.h"
#include "src/zero/precision.h"

namespace zt {
namespace {

// Spans in flight at once: the model holds two, a few more leave room for a caller's own.
constexpr size_t kHeldReserve = 8;

}  // namespace

size_t CastParams::arena_bytes(int64_t elems, DType working) {
  return static_cast<size_t>(elems) * dtype_size(working);
}

CastParams::CastParams(const ParamLayout& layout, DType working, const DeviceContext& ctx,
                       int64_t arena_elems, const float* master)
    : layout_(layout),
      working_(working),
      be_(ctx.backend()),
      master_(master),
      capacity_(arena_elems) {
  ZT_CHECK(working != DType::F32, "fp32 working parameters are the master itself: nothing to cast");
  ZT_CHECK(arena_elems > 0, "the cast store needs the model's held-parameter bound");
  arena_ = ctx.pool().allocate(arena_bytes(arena_elems, working), MemCategory::Buffers);
  held_.reserve(kHeldReserve);
  stats_.arena_elems = arena_elems;
}

CRef CastParams::acquire(const Span& s) {
  ZT_CHECK(top_ + s.len <= capacity_,
           "the model holds {} parameter elements at once, more than the cast store's {} (block "
           "{}, offset {}, {} elements)",
           top_ + s.len, capacity_, s.block, s.offset, s.len);
  const int64_t off = layout_offset(layout_, s);
  void* dst = at(arena_.data(), working_, top_);
  from_f32(be_, dst, working_, master_ + off, s.len);
  held_.push_back({off, s.len, top_, false});
  top_ += s.len;
  stats_.peak_elems = std::max(stats_.peak_elems, top_);
  ++stats_.casts;
  stats_.cast_elems += s.len;
  return {dst, working_};
}

void CastParams::release(const Span& s) {
  const int64_t off = layout_offset(layout_, s);
  // The latest acquire of this span still held; its room frees once everything above it has.
  auto it = std::find_if(held_.rbegin(), held_.rend(), [&](const Held& h) {
    return !h.released && h.layout_offset == off && h.len == s.len;
  });
  ZT_CHECK(it != held_.rend(), "release of a span not held (block {}, offset {}, {} elements)",
           s.block, s.offset, s.len);
  it->released = true;
  while (!held_.empty() && held_.back().released) held_.pop_back();
  top_ = held_.empty() ? 0 : held_.back().at + held_.back().len;
}

}  // namespace zt
