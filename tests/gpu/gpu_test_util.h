#pragma once
// Shared by the GPU tests: skip visibly when the machine has no usable CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

namespace zt::gpu_test {
// Number of CUDA devices this process can use (0 without a driver or a GPU).
inline int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}
}  // namespace zt::gpu_test

#define ZT_REQUIRE_GPU()                                                          \
  do {                                                                            \
    if (::zt::gpu_test::device_count() == 0)                                      \
      GTEST_SKIP() << "no CUDA device visible: GPU test skipped (runs on a GPU)"; \
  } while (0)
