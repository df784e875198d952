#pragma once
// Which GPU this process uses. Callable before MPI_Init (the local rank comes from the launcher's
// environment, comm/runtime.h's launch_info_from_env) and on machines without a driver.
namespace zt::cuda {

// CUDA devices this process can see; 0 when there is no driver or no GPU (never throws).
int device_count();

// Makes device `local_rank` current for this process (one GPU per rank on a node) and returns
// it. Throws zt::InputError when no GPU is visible or the node runs more ranks than it has GPUs
// (NCCL refuses two ranks of one communicator on the same device).
int select_device(int local_rank);

}  // namespace zt::cuda
