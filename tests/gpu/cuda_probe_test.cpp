// The first thing the GPU check reads: the CUDA runtime and driver versions and what the runtime
// sees. Fails when the machine has a GPU (gpus_expected()) that CUDA cannot use — a driver older
// than the runtime, a missing libcuda in the container — so that case is a failure with its
// cause, not a suite of skips. Links the CUDA runtime only (no NCCL, no cuBLAS).
#include <gtest/gtest.h>

#include <cstdio>

#include "src/core/cuda_device.h"
#include "src/core/gpu_choice.h"

namespace zt::cuda {
namespace {

TEST(CudaProbe, VersionsAndDevices) {
  const Probe p = probe();
  std::printf("%s\n", p.line().c_str());
  const bool expected = gpus_expected();
  std::printf("GPUs expected on this machine: %s\n", expected ? "yes" : "no");
  if (p.devices == 0) {
    if (expected) FAIL() << "this machine has a GPU, but CUDA sees none: " << p.line();
    GTEST_SKIP() << "no CUDA device visible: GPU test skipped (runs on a GPU); " << p.line();
  }
  EXPECT_EQ(p.error, 0);
  EXPECT_GT(p.runtime, 0);
}

}  // namespace
}  // namespace zt::cuda
