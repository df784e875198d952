#pragma once
// TrainDevice: what one training process computes on, allocates from and communicates over,
// chosen by --device:
//   cpu   the CPU backend, one host MemoryPool (a fixed region with --device-memory), MPI groups
//   cuda  the GPU of this rank's local rank, the CUDA backend on its compute stream, the caching
//         device allocator (fixed capacity with --device-memory), pinned host memory for staging
//         and --cpu-checkpointing, NCCL groups; host-side bookkeeping (metrics, norms,
//         checkpoint metadata) stays on an MPI world over host memory (Topology::host_world)
// Members are declared so that they are destroyed in the right order: the Topology and its
// communicators before the pools they stage in, the pools before the backend whose stream they
// zero-fill on. Destroy the Trainer first.
#include <memory>
#include <string>

#include "kernels/backend.h"
#include "src/comm/runtime.h"
#include "src/comm/topology.h"
#include "src/config/options.h"

namespace zt {

// True when this build has the CUDA backend.
bool cuda_backend_built();
// Number of GPUs visible to this process (0 without the CUDA backend, a driver or a GPU).
int visible_gpus();
// --device resolved: "auto" becomes cuda when the build has the CUDA backend and a GPU is
// visible, else cpu. Throws InputError for cuda without either; allocates nothing, so it runs
// with the other checks before anything is allocated, identically on every rank.
Device resolve_device(const std::string& device);

class TrainDevice {
 public:
  // `rt` null: one process without MPI, its Topology a world of one (comm::SelfCommunicator);
  // the options' parallel sizes are then not used.
  TrainDevice(const TrainOptions& o, comm::MpiRuntime* rt);
  ~TrainDevice();
  TrainDevice(const TrainDevice&) = delete;
  TrainDevice& operator=(const TrainDevice&) = delete;

  Device device() const { return device_; }
  DeviceContext context() const;
  MemoryPool& pool() const { return *pool_; }
  MemoryPool& host_pool() const { return host_pool_ ? *host_pool_ : *pool_; }
  comm::Topology& topology() const { return *topo_; }
  // The CUDA device's name ("cpu" on the CPU backend).
  std::string device_name() const;
  // CUDA: the NCCL communicators this rank made (the world and each group of more than one rank;
  // none for a world of one: comm::nccl_communicators) and the device memory they took, outside
  // the pool (the drop of cudaMemGetInfo's free bytes across their creation, before the pool
  // exists; comm::nccl_planned_bytes is the plan's figure); 0 otherwise.
  int nccl_communicators() const { return nccl_communicators_; }
  size_t nccl_bytes() const { return nccl_bytes_; }

 private:
  struct Cuda;  // the CUDA backend and NCCL's shared context (defined only in CUDA builds)
  Device device_;
  std::unique_ptr<Cuda> cuda_;  // destroyed last: pools and communicators use its stream
  std::unique_ptr<MemoryPool> host_pool_, pool_;    // host_pool_ only when it differs from pool_
  std::unique_ptr<comm::Communicator> host_world_;  // MPI over host memory (CUDA only)
  std::unique_ptr<comm::Communicator> world_;       // MPI (cpu), NCCL (cuda) or one rank alone
  std::unique_ptr<comm::Topology> topo_;
  int nccl_communicators_ = 0;
  size_t nccl_bytes_ = 0;
};

}  // namespace zt
