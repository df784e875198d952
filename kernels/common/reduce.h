#pragma once
// Reduction bodies with a fixed summation order. Float sums use kLanes independent partial
// sums (lane j takes elements j, j+kLanes, ...) combined by a fixed tree: the compiler can
// vectorise that without -ffast-math, and the result does not depend on threads or the ISA.
#include <cstdint>

#include "src/core/half.h"
#include "src/core/hd.h"

namespace zt {

inline constexpr int kLanes = 16;

// Combines kLanes partials pairwise in a fixed order.
ZT_HD float combine_lanes(float* acc) {
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

ZT_HD float lane_sum(const float* x, int n) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j];
  for (int j = 0; i + j < n; ++j) acc[j] += x[i + j];
  return combine_lanes(acc);
}

// sum_i (x_i - c)^2
ZT_HD float lane_sum_sq_dev(const float* x, float c, int n) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float d = x[i + j] - c;
      acc[j] += d * d;
    }
  for (int j = 0; i + j < n; ++j) {
    const float d = x[i + j] - c;
    acc[j] += d * d;
  }
  return combine_lanes(acc);
}

// sum_i x_i y_i
ZT_HD float lane_dot(const float* x, const float* y, int n) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j] * y[i + j];
  for (int j = 0; i + j < n; ++j) acc[j] += x[i + j] * y[i + j];
  return combine_lanes(acc);
}

// max_i x_i (n >= 1). NaNs are not propagated reliably; callers feed finite data.
ZT_HD float lane_max(const float* x, int n) {
  float acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = x[0];
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  for (int j = 0; i + j < n; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] = acc[j + w] > acc[j] ? acc[j + w] : acc[j];
  return acc[0];
}

// The square of one element, in double, for global L2 norms.
template <typename T>
ZT_HD double square_f64(T x) {
  const double d = static_cast<double>(to_float(x));
  return d * d;
}

// Exponent all ones: inf or NaN.
ZT_HD bool is_inf_or_nan(float x) {
  return (float_bits(x) & 0x7f800000u) == 0x7f800000u;
}
ZT_HD bool is_inf_or_nan(bf16 x) {
  return (x.bits & 0x7f80u) == 0x7f80u;
}
ZT_HD bool is_inf_or_nan(fp16 x) {
  return (x.bits & 0x7c00u) == 0x7c00u;
}

}  // namespace zt
