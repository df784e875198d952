#include "src/core/cuda_device.h"

#include <cuda_runtime_api.h>

#include "src/core/cuda_check.h"
#include "src/core/gpu_choice.h"

namespace zt::cuda {

std::string Probe::line() const {
  std::string s = fmt::format("CUDA runtime {}, driver {}", cuda_version_string(runtime),
                              driver > 0 ? cuda_version_string(driver) : "none found");
  if (error != 0) return s + fmt::format(": cudaGetDeviceCount failed: {} ({})", name, text);
  return s + fmt::format(", {} device(s)", devices);
}

Probe probe() {
  Probe p;
  (void)cudaRuntimeGetVersion(&p.runtime);
  if (cudaDriverGetVersion(&p.driver) != cudaSuccess) p.driver = 0;
  const cudaError_t rc = cudaGetDeviceCount(&p.devices);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: "no driver" must not poison later calls
    p.devices = 0;
    p.error = static_cast<int>(rc);
    p.name = cudaGetErrorName(rc);
    p.text = cudaGetErrorString(rc);
  }
  return p;
}

int device_count() {
  return probe().devices;
}

int select_device(int local_rank) {
  const Probe p = probe();
  const int device = device_for_local_rank(local_rank, p.devices, p.line());
  ZT_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

DeviceMemory device_memory() {
  DeviceMemory m;
  ZT_CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
  return m;
}

}  // namespace zt::cuda
