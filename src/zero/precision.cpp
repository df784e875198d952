#include "src/zero/precision.h"

namespace zt {

void to_f32(Backend& be, float* dst, const void* src, DType t, int64_t n) {
  if (t == DType::BF16)
    be.cast(dst, static_cast<const bf16*>(src), n);
  else if (t == DType::F16)
    be.cast(dst, static_cast<const fp16*>(src), n);
  else if (dst != src)
    be.copy(dst, src, static_cast<size_t>(n) * 4);
}

void from_f32(Backend& be, void* dst, DType t, const float* src, int64_t n) {
  if (t == DType::BF16)
    be.cast(static_cast<bf16*>(dst), src, n);
  else if (t == DType::F16)
    be.cast(static_cast<fp16*>(dst), src, n);
  else if (dst != src)
    be.copy(dst, src, static_cast<size_t>(n) * 4);
}

void accumulate_f32(Backend& be, void* dst, DType t, const float* src, int64_t n) {
  if (t == DType::BF16)
    be.accumulate(static_cast<bf16*>(dst), src, n);
  else if (t == DType::F16)
    be.accumulate(static_cast<fp16*>(dst), src, n);
  else
    be.add_inplace(static_cast<float*>(dst), src, n);
}

}  // namespace zt
