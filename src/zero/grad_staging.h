#pragma once
// fp32 regions the model adds a gradient span into when the kept gradient is not fp32 or not
// whole (half precision, ZeRO stages 2-3): two slots, since the model opens at most two spans at
// once and at most one of them is a chunk of a matrix (a weight with its bias, a layernorm's two
// vectors; ParamSource). So one slot is of the longest span the model produces (the size follows
// the bucket flag, not the largest layer or the vocabulary) and the other of the longest vector
// parameter (kVectorSlotElems at least); a span takes the shortest free slot it fits. Two slots of
// the longest span would hold a second word-embedding-sized fp32 region that no span ever uses.
#include <array>
#include <cstdint>

#include "kernels/backend.h"
#include "src/core/memory_pool.h"
#include "src/model/param_layout.h"
#include "src/model/param_source.h"

namespace zt {

class GradStaging {
 public:
  static constexpr int kSlots = 2;
  // The vector slot's length: the longest vector parameter, at least this (and at most the long
  // slot), so that like the long slot it follows the flags, not the model: 64 K elements hold
  // the MLP bias (4h) of any model up to hidden 16384.
  static constexpr int64_t kVectorSlotElems = int64_t{1} << 16;
  GradStaging() = default;
  // The slots for `layout`'s spans under ParamSource::max_span() = max_span, fp32, category
  // buffers, in ctx.pool().
  GradStaging(const DeviceContext& ctx, const ParamLayout& layout, int64_t max_span);
  // Their bytes (the planner's term).
  static size_t bytes(const ParamLayout& layout, int64_t max_span);
  // A free slot, its first s.len elements zeroed.
  float* open(const Span& s);
  // The slot holding `s`.
  float* find(const Span& s) const;
  void close(const Span& s);

 private:
  struct Slot {
    Buffer buffer;
    Span span;
    bool open = false;
  };
  Backend* be_ = nullptr;
  std::array<Slot, kSlots> slots_;
};

// At least the longest span the model opens when it cuts every parameter by
// ParamSpec::chunk_rows(max_span): GradStaging's long slot.
int64_t longest_chunk(const ParamLayout& layout, int64_t max_span);

}  // namespace zt
