#pragma once
// Grids with more blocks along y than the hardware allows: gridDim.y and gridDim.z are each
// limited to 65,535 blocks (gridDim.x to 2^31 - 1), so n blocks meant for y are folded into
// y·z planes. A kernel launched with fold_y(x, n) takes its index from folded_y() and returns at
// once when it is n or more (the padding blocks of the last z plane).
#include <cuda_runtime.h>

#include <cstdint>

namespace zt::cuda::detail {

inline constexpr int64_t kMaxGridYZ = 65535;

// n >= 1 (and at most 65,535², far beyond the int sizes of the kernels).
inline dim3 fold_y(unsigned x, int64_t n) {
  const int64_t y = n < kMaxGridYZ ? n : kMaxGridYZ;
  return dim3(x, static_cast<unsigned>(y), static_cast<unsigned>((n + y - 1) / y));
}

__device__ inline int64_t folded_y() {
  return int64_t{blockIdx.z} * gridDim.y + blockIdx.y;
}

}  // namespace zt::cuda::detail
