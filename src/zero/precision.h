#pragma once
// dtype-dispatching helpers over flat buffers in `be`'s memory: conversions between the working
// precision and fp32, the half-gradient accumulation.
#include <cstdint>

#include "kernels/backend.h"
#include "src/core/dtype.h"

namespace zt {

void to_f32(Backend& be, float* dst, const void* src, DType src_type, int64_t n);
void from_f32(Backend& be, void* dst, DType dst_type, const float* src, int64_t n);
// dst (working precision) += src (fp32), rounded once.
void accumulate_f32(Backend& be, void* dst, DType dst_type, const float* src, int64_t n);
// Element pointer arithmetic on a typed flat buffer.
inline void* at(void* base, DType t, int64_t i) {
  return static_cast<char*>(base) + i * static_cast<int64_t>(dtype_size(t));
}
inline const void* at(const void* base, DType t, int64_t i) {
  return static_cast<const char*>(base) + i * static_cast<int64_t>(dtype_size(t));
}

}  // namespace zt
