#pragma once
// Vectors between fp32 and a working precision H (bf16, fp16; float is the identity), for the
// unit and GPU tests that compare kernels across precisions.
#include <cstddef>
#include <vector>

#include "src/core/half.h"

namespace zt::test {

// Each value rounded to H.
template <typename H>
std::vector<H> narrow(const std::vector<float>& f) {
  std::vector<H> h(f.size());
  for (size_t i = 0; i < f.size(); ++i) h[i] = from_float<H>(f[i]);
  return h;
}

// Each value widened to fp32 (exact).
template <typename H>
std::vector<float> widen(const std::vector<H>& h) {
  std::vector<float> f(h.size());
  for (size_t i = 0; i < h.size(); ++i) f[i] = to_float(h[i]);
  return f;
}

}  // namespace zt::test
