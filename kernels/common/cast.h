#pragma once
// Element conversions between fp32 compute and half storage (round to nearest even, from
// src/core/half.h), and the half-gradient accumulation dst = round(dst + src).
#include "src/core/half.h"
#include "src/core/hd.h"

namespace zt {

template <typename To, typename From>
ZT_HD To convert(From x) {
  return from_float<To>(to_float(x));
}

// dst = round(float(dst) + src): one rounding per accumulation.
template <typename T>
ZT_HD T accumulate_rounded(T dst, float src) {
  return from_float<T>(to_float(dst) + src);
}

}  // namespace zt
