#pragma once
// exp for float without tables, errno or libm calls, so element-wise loops that use it vectorise
// (glibc's expf does not without -ffast-math) and the CUDA backend computes the same value.
// Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2, then a degree-6 polynomial (Cephes
// coefficients): relative error about 2 ulp. 2^n is applied as two factors, so results
// underflow gradually to subnormals and 0 and overflow to inf like expf; NaN propagates.
#include <cstdint>

#include "src/core/half.h"
#include "src/core/hd.h"

namespace zt {

ZT_HD float exp_f32(float x) {
  constexpr float kLo = -104.0f, kHi = 89.0f;  // exp(-104) rounds to 0, exp(89) to inf
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;  // n * kLn2Hi is exact
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  // Two plain selects (min, then max): compilers turn them into vector min/max; NaN passes.
  float xc = x > kHi ? kHi : x;
  xc = xc < kLo ? kLo : xc;
  const float t = xc * kLog2e + kRound;
  const float n = t - kRound;
  float r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // The low mantissa bits of t hold n, in [-150, 129]; 2^n = 2^n1 * 2^n2 with both factors
  // normal, and the second multiply does the (single) rounding into the subnormal range.
  const int32_t e = static_cast<int32_t>(float_bits(t) - float_bits(kRound));
  const int32_t n1 = e >> 1, n2 = e - n1;
  const float s1 = bits_float(static_cast<uint32_t>(n1 + 127) << 23);
  const float s2 = bits_float(static_cast<uint32_t>(n2 + 127) << 23);
  return (p * s1) * s2;
}

}  // namespace zt
