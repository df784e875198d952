#pragma once
// fp32 regions the model adds a gradient span into when the kept gradient is not fp32 or not
// whole (half precision, ZeRO stages 2-3): two slots (the model opens at most two spans at once),
// each of the longest span the model produces, so the size follows the bucket flag, not the
// largest layer or the vocabulary.
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
  GradStaging() = default;
  // Two slots of `elems` fp32 each, category buffers, in ctx.pool().
  GradStaging(const DeviceContext& ctx, int64_t elems);
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
// ParamSpec::chunk_rows(max_span): what GradStaging is sized by.
int64_t longest_chunk(const ParamLayout& layout, int64_t max_span);

}  // namespace zt
