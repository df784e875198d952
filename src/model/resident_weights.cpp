#include "src/model/resident_weights.h"

#include <algorithm>
#include <cstring>

#include "src/model/param_ref.h"

namespace zt {

ResidentWeights::ResidentWeights(const ParamLayout& layout, DType dtype, const DeviceContext& ctx,
                                 int64_t max_span)
    : layout_(layout),
      dtype_(dtype),
      be_(ctx.backend()),
      data_(ctx.pool().allocate(static_cast<size_t>(layout.numel()) * dtype_size(dtype),
                                MemCategory::Params)) {
  for (const ParamSpec& p : layout.params()) max_span_ = std::max(max_span_, p.numel());
  if (max_span > 0) max_span_ = max_span;
}

void ResidentWeights::set(int64_t offset, const float* host, int64_t n) {
  ZT_CHECK(offset >= 0 && n >= 0 && offset + n <= layout_.numel(),
           "elements [{}, {}) outside a layout of {}", offset, offset + n, layout_.numel());
  const Ref dst = Ref(data_.data(), dtype_) + offset;
  const size_t bytes = dst.bytes(n);
  if (dtype_ == DType::F32) {
    be_.copy_to_device(dst.p, host, bytes);
    return;
  }
  staging_.resize(bytes);
  visit_dtype(dtype_, [&](auto t) {
    using T = decltype(t);
    auto* h = reinterpret_cast<T*>(staging_.data());
    for (int64_t i = 0; i < n; ++i) h[i] = from_float<T>(host[i]);
  });
  be_.copy_to_device(dst.p, staging_.data(), bytes);
}

CRef ResidentWeights::acquire(const Span& s) {
  return CRef(Ref(data_.data(), dtype_) + layout_offset(layout_, s));
}

float* ResidentWeights::open_grads(const Span& s) {
  ZT_CHECK(false, "ResidentWeights holds no gradients (block {}, offset {})", s.block, s.offset);
  return nullptr;
}

}  // namespace zt
