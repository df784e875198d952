#pragma once
// Shared by the GPU tests: skip visibly when the machine has no GPU, fail when it has one that
// CUDA cannot use. "Has one": gpus_expected() (src/core/gpu_choice.h) — ZT_EXPECT_GPU=1, which
// tests/gpu/check.sh sets when nvidia-smi lists GPUs, or the kernel driver listing one. A driver
// older than the runtime (cudaErrorInsufficientDriver) then fails every GPU test with the versions
// instead of turning the suite into skips that exit 0.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "src/core/cuda_device.h"
#include "src/core/gpu_choice.h"

namespace zt::gpu_test {
// Number of CUDA devices this process can use (0 without a driver or a GPU).
inline int device_count() {
  return cuda::device_count();
}
}  // namespace zt::gpu_test

#define ZT_REQUIRE_GPU()                                                                        \
  do {                                                                                          \
    if (::zt::gpu_test::device_count() == 0) {                                                  \
      const ::zt::cuda::Probe zt_probe_ = ::zt::cuda::probe();                                  \
      if (::zt::gpus_expected())                                                                \
        GTEST_FAIL() << "this machine has a GPU (ZT_EXPECT_GPU or the NVIDIA driver says so), " \
                        "but CUDA sees none: "                                                  \
                     << zt_probe_.line();                                                       \
      GTEST_SKIP() << "no CUDA device visible: GPU test skipped (runs on a GPU); "              \
                   << zt_probe_.line();                                                         \
    }                                                                                           \
  } while (0)
