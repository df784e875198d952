#pragma once
// Which GPU this process uses. Callable before MPI_Init (the local rank comes from the launcher's
// environment, comm/runtime.h's launch_info_from_env) and on machines without a driver.
#include <string>

namespace zt::cuda {

// What the CUDA runtime says about this machine, without throwing.
struct Probe {
  int devices = 0;   // 0 when cudaGetDeviceCount failed
  int runtime = 0;   // cudaRuntimeGetVersion: the runtime this program loaded (13000 = 13.0)
  int driver = 0;    // cudaDriverGetVersion: the newest CUDA the driver supports; 0 = no driver
  int error = 0;     // cudaGetDeviceCount's cudaError_t (0: success)
  std::string name;  // its name ("cudaErrorInsufficientDriver"); empty on success
  std::string text;  // its description
  // "CUDA runtime 13.0, driver 12.4: cudaGetDeviceCount failed: cudaErrorInsufficientDriver (CUDA
  // driver version is insufficient for CUDA runtime version)"; on success "..., 2 device(s)".
  std::string line() const;
};
Probe probe();

// CUDA devices this process can see; 0 when there is no driver, no GPU or the runtime cannot use
// the driver (never throws; probe() says why).
int device_count();

// Makes device_for_local_rank(local_rank, device_count()) (gpu_choice.h) current for this process
// and returns it. Throws zt::InputError when no GPU is visible (naming what CUDA reported) or the
// local rank has no GPU of its own.
int select_device(int local_rank);

// Free and total bytes of the current device (cudaMemGetInfo).
struct DeviceMemory {
  size_t free = 0, total = 0;
};
DeviceMemory device_memory();

}  // namespace zt::cuda
