#pragma once
// Counter-based dropout: the keep decision for element i is a pure function of (seed, offset+i),
// so backward and activation recompute regenerate the mask instead of storing it, and the
// same mask comes out on CPU and GPU. A stream (seed) is chosen by the RngTracker per purpose.
#include <cstdint>

#include "src/core/hd.h"

namespace zt {

struct DropoutParams {
  float p = 0;          // drop probability; 0 disables dropout
  uint64_t seed = 0;    // the stream
  uint64_t offset = 0;  // first counter value for element 0
};

// splitmix64 finaliser over (seed, counter): a well-mixed 64-bit hash.
ZT_HD uint64_t mix64(uint64_t seed, uint64_t counter) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + counter + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// 24-bit uniform in [0, 1). (The value fits in int32; converting through int32 gives the same
// float and lets CPU loops vectorise: AVX2 has no uint64 -> float conversion.)
ZT_HD float uniform01(uint64_t seed, uint64_t counter) {
  return static_cast<float>(static_cast<int32_t>(mix64(seed, counter) >> 40)) *
         (1.0f / 16777216.0f);
}

// Multiplier for element i: 0 when dropped, 1/(1-p) when kept.
ZT_HD float dropout_scale(const DropoutParams& d, uint64_t i) {
  return uniform01(d.seed, d.offset + i) < d.p ? 0.0f : 1.0f / (1.0f - d.p);
}

// x through dropout: the one place both backends multiply by the mask.
ZT_HD float dropout_apply(float x, const DropoutParams& d, uint64_t i) {
  return x * dropout_scale(d, i);
}

}  // namespace zt
