#include "src/zero/precision.h"

#include <cstring>

#include "kernels/cpu/ops.h"

namespace zt {

void to_f32(float* dst, const void* src, DType t, int64_t n) {
  if (t == DType::BF16)
    cpu::cast(dst, static_cast<const bf16*>(src), n);
  else if (t == DType::F16)
    cpu::cast(dst, static_cast<const fp16*>(src), n);
  else if (dst != src)
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
}

void from_f32(void* dst, DType t, const float* src, int64_t n) {
  if (t == DType::BF16)
    cpu::cast(static_cast<bf16*>(dst), src, n);
  else if (t == DType::F16)
    cpu::cast(static_cast<fp16*>(dst), src, n);
  else if (dst != src)
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
}

void accumulate_f32(void* dst, DType t, const float* src, int64_t n) {
  if (t == DType::BF16)
    cpu::accumulate(static_cast<bf16*>(dst), src, n);
  else if (t == DType::F16)
    cpu::accumulate(static_cast<fp16*>(dst), src, n);
  else
    cpu::add_inplace(static_cast<float*>(dst), src, n);
}

double sum_squares(const void* x, DType t, int64_t n) {
  if (t == DType::BF16) return cpu::sum_squares(static_cast<const bf16*>(x), n);
  if (t == DType::F16) return cpu::sum_squares(static_cast<const fp16*>(x), n);
  return cpu::sum_squares(static_cast<const float*>(x), n);
}

}  // namespace zt
