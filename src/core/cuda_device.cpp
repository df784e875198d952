#include "src/core/cuda_device.h"

#include <cuda_runtime_api.h>

#include "src/core/cuda_check.h"

namespace zt::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: "no driver" must not poison later calls
    return 0;
  }
  return n;
}

int select_device(int local_rank) {
  const int n = device_count();
  ZT_REQUIRE(n > 0,
             "the CUDA backend needs a GPU, but none is visible to this process (check "
             "CUDA_VISIBLE_DEVICES and the driver), or run on the CPU backend");
  ZT_REQUIRE(local_rank >= 0 && local_rank < n,
             "local rank {} has no GPU of its own: {} visible on this node; launch at most {} "
             "ranks per node",
             local_rank, n, n);
  ZT_CUDA_CHECK(cudaSetDevice(local_rank));
  return local_rank;
}

}  // namespace zt::cuda
