#pragma once
// bf16 and fp16 storage types with round-to-nearest-even conversion from fp32. The bodies are
// ZT_HD so the CUDA backend converts exactly as the CPU tests check.
#include <cstdint>
#include <cstring>

#include "src/core/dtype.h"
#include "src/core/hd.h"

namespace zt {

ZT_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

ZT_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

struct bf16 {
  uint16_t bits = 0;
};
struct fp16 {
  uint16_t bits = 0;
};

ZT_HD bf16 to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<uint16_t>((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return bf16{static_cast<uint16_t>(u >> 16)};
}

ZT_HD float to_float(bf16 h) {
  return bits_float(static_cast<uint32_t>(h.bits) << 16);
}

ZT_HD fp16 to_fp16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return fp16{static_cast<uint16_t>(sign | 0x7e00u)};   // NaN
  if (a >= 0x477ff000u) return fp16{static_cast<uint16_t>(sign | 0x7c00u)};  // rounds to inf
  if (a < 0x38800000u) {
    // Result is subnormal (or zero): value = a_float / 2^-24 rounded to an integer, ties to even.
    if (a < 0x33000000u) return fp16{sign};  // below half the smallest subnormal
    const uint32_t exp = a >> 23;
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exp;  // 14..24 for this range
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return fp16{static_cast<uint16_t>(sign | q)};
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  uint32_t r = a - 0x38000000u;
  r += 0xfffu + ((r >> 13) & 1u);
  return fp16{static_cast<uint16_t>(sign | (r >> 13))};
}

// Without a branch or loop per element, so a loop of conversions vectorises: the exponent and
// mantissa shifted into place and rebiased (inf and NaN rebiased once more, to 0xff); a subnormal
// or zero is built as 2^-14 (1 + mant / 1024) and 2^-14 subtracted, which leaves mant * 2^-24
// exactly (no rounding). Exact for every one of the 65536 inputs, NaN payloads included.
ZT_HD float to_float(fp16 h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t shifted = static_cast<uint32_t>(h.bits & 0x7fffu) << 13;
  const uint32_t exp = shifted & 0x0f800000u;
  uint32_t u = shifted + (112u << 23);
  if (exp == 0x0f800000u) u += 112u << 23;
  float f = bits_float(u);
  if (exp == 0) f = bits_float(u + (1u << 23)) - bits_float(113u << 23);
  return bits_float(float_bits(f) | sign);
}

ZT_HD float to_float(float f) {
  return f;
}

// Conversion from fp32 into any storage type, for templated kernels.
template <typename T>
ZT_HD T from_float(float f);
template <>
ZT_HD float from_float<float>(float f) {
  return f;
}
template <>
ZT_HD bf16 from_float<bf16>(float f) {
  return to_bf16(f);
}
template <>
ZT_HD fp16 from_float<fp16>(float f) {
  return to_fp16(f);
}

// The DType of a storage type, and the call f(T{}) for the storage type of a DType: how a
// backend turns a typed pointer into its templated kernel.
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::F32;
}
template <>
constexpr DType dtype_of<bf16>() {
  return DType::BF16;
}
template <>
constexpr DType dtype_of<fp16>() {
  return DType::F16;
}

template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::BF16:
      return f(bf16{});
    case DType::F16:
      return f(fp16{});
    case DType::F32:
      break;
  }
  return f(float{});
}

}  // namespace zt
