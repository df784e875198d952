#include "src/train/train_device.h"

#include "src/comm/self_communicator.h"
#include "src/config/derive.h"
#include "src/core/slab_allocator.h"
#include "src/pipeline/exchange.h"

#if ZT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/context.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/ops.h"
#include "src/comm/nccl_communicator.h"
#include "src/comm/nccl_groups.h"
#include "src/core/cuda_allocator.h"
#include "src/core/cuda_check.h"
#include "src/core/cuda_device.h"
#endif

namespace zt {

#if ZT_HAVE_CUDA
struct TrainDevice::Cuda {
  CudaBackend backend;
  comm::NcclContext nccl;
  std::unique_ptr<cuda::ScratchPoolScope> scratch;  // the kernels' own buffers, in pool_
};
#else
struct TrainDevice::Cuda {};
#endif

bool cuda_backend_built() {
#if ZT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int visible_gpus() {
#if ZT_HAVE_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

Device resolve_device(const std::string& device) {
  if (device == "cpu") return Device::Cpu;
  if (device == "auto")
    return cuda_backend_built() && visible_gpus() > 0 ? Device::Cuda : Device::Cpu;
  ZT_REQUIRE(device == "cuda", "--device must be cuda, cpu or auto, got '{}'", device);
  ZT_REQUIRE(cuda_backend_built(),
             "--device cuda: this zerotron was built without the CUDA backend (no nvcc was found "
             "at configure time), rebuild with -DZT_CUDA=ON or use --device cpu");
#if ZT_HAVE_CUDA
  const cuda::Probe probe = cuda::probe();
  ZT_REQUIRE(probe.devices > 0,
             "--device cuda: no GPU is visible to this process (check the driver and "
             "CUDA_VISIBLE_DEVICES), or use --device cpu; {}",
             probe.line());
#endif
  return Device::Cuda;
}

TrainDevice::TrainDevice(const TrainOptions& o, comm::MpiRuntime* rt)
    : device_(resolve_device(o.device)) {
  const auto fixed = static_cast<size_t>(o.device_memory);
  if (device_ == Device::Cpu) {
    pool_ = std::make_unique<MemoryPool>(fixed > 0 ? std::make_unique<SlabAllocator>(fixed)
                                                   : make_host_allocator());
    if (rt == nullptr) {
      world_ = std::make_unique<comm::SelfCommunicator>(cpu_backend());
      topo_ = std::make_unique<comm::Topology>(*world_, 1);
      return;
    }
    world_ = rt->world(*pool_);
    topo_ = std::make_unique<comm::Topology>(*world_, o.tensor_model_parallel_size,
                                             o.pipeline_model_parallel_size, nullptr,
                                             o.context_parallel_size, o.expert_model_parallel_size);
    return;
  }
  // NCCL matches point-to-point messages in issue order and a send holds its stream until the
  // peer receives: a stage issues each round's sends with the next round's receives as one batch
  // (pipeline/exchange.h), which orders 1F1B and the interleaved schedule; a schedule it could
  // not order is refused before anything is allocated.
  if (o.pipeline_model_parallel_size > 1) {
    const int world = rt != nullptr ? rt->world_size() : 1;
    const pipeline::ScheduleShape shape{o.pipeline_model_parallel_size,
                                        batch_config(o, data_parallel_size(o, world)).accumulation,
                                        model_chunks(o)};
    const std::string why = pipeline::check_exchange(shape);
    ZT_REQUIRE(why.empty(),
               "--device cuda: the pipeline schedule with {} micro-batches per step over {} stages "
               "and {} model chunks would deadlock in NCCL's point-to-point order ({}); use 1F1B "
               "(no --num-layers-per-virtual-pipeline-stage)",
               shape.micro_batches, shape.stages, shape.chunks, why);
  }
#if ZT_HAVE_CUDA
  // One GPU per rank on a node, chosen before anything touches the device.
  cuda::select_device(rt != nullptr ? rt->local_rank() : 0);
  cuda_detail::error_rank() = rt != nullptr ? rt->rank() : 0;
  cuda::set_tf32(o.tf32);
  cuda_ = std::make_unique<Cuda>();
  const cudaStream_t compute = cuda_->backend.compute_stream();
  host_pool_ = std::make_unique<MemoryPool>(make_pinned_allocator());
  // The NCCL communicators before the device pool: ncclCommInitRank takes NCCL's own device
  // memory (outside the pool), and with --device-memory the pool's slab would otherwise leave it
  // none. A world of one needs no NCCL: every group is this rank alone.
  if (rt != nullptr && rt->world_size() > 1) {
    host_world_ = rt->world(*host_pool_);
    cuda_->nccl =
        comm::NcclContext{&rt->stats(), &rt->watchdog(), nullptr, compute, &cuda_->backend};
    const cuda::DeviceMemory before = cuda::device_memory();
    world_ = comm::NcclCommunicator::world(cuda_->nccl);
    topo_ = std::make_unique<comm::Topology>(*world_, o.tensor_model_parallel_size,
                                             o.pipeline_model_parallel_size, host_world_.get(),
                                             o.context_parallel_size, o.expert_model_parallel_size);
    ZT_CUDA_CHECK(cudaDeviceSynchronize());  // NCCL's lazy setup done before the second look
    const cuda::DeviceMemory after = cuda::device_memory();
    // The world and the groups with another rank (a group of one is a SelfCommunicator).
    nccl_communicators_ = 1;
    for (comm::GroupKind k : {comm::GroupKind::Tp, comm::GroupKind::Cp, comm::GroupKind::Dp,
                              comm::GroupKind::Pp, comm::GroupKind::Mp})
      nccl_communicators_ += comm::group_needs_nccl(topo_->group(k).size()) ? 1 : 0;
    for (const comm::Communicator* g : {topo_->embedding(), topo_->ep(), topo_->edp()})
      nccl_communicators_ += g != nullptr && comm::group_needs_nccl(g->size()) ? 1 : 0;
    nccl_bytes_ = before.free > after.free ? before.free - after.free : 0;
  }
  CudaAllocatorOptions a;
  a.fixed_capacity = fixed;
  a.stream = compute;
  pool_ = std::make_unique<MemoryPool>(make_cuda_allocator(a));
  cuda_->nccl.device_pool = pool_.get();
  cuda_->scratch = std::make_unique<cuda::ScratchPoolScope>(*pool_, compute);
  if (topo_ == nullptr) {
    world_ = std::make_unique<comm::SelfCommunicator>(cuda_->backend);
    if (rt != nullptr) host_world_ = rt->world(*host_pool_);
    topo_ = std::make_unique<comm::Topology>(
        *world_, rt != nullptr ? o.tensor_model_parallel_size : 1, 1, host_world_.get());
  }
#else
  (void)rt;
  throw InputError("--device cuda: this zerotron was built without the CUDA backend");
#endif
}

TrainDevice::~TrainDevice() {
  // Communicators before the pools they stage in, the pools before the backend (declaration
  // order does this; written out because a reordering of the members would break it silently).
  topo_.reset();
  world_.reset();
  host_world_.reset();
#if ZT_HAVE_CUDA
  if (cuda_) cuda_->scratch.reset();
#endif
  pool_.reset();
  host_pool_.reset();
  cuda_.reset();
}

DeviceContext TrainDevice::context() const {
#if ZT_HAVE_CUDA
  if (device_ == Device::Cuda) return DeviceContext(cuda_->backend, *pool_, *host_pool_);
#endif
  return DeviceContext(*pool_);
}

std::string TrainDevice::device_name() const {
#if ZT_HAVE_CUDA
  if (device_ == Device::Cuda) {
    int dev = 0;
    cudaDeviceProp prop{};
    ZT_CUDA_CHECK(cudaGetDevice(&dev));
    ZT_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    return prop.name;
  }
#endif
  return "cpu";
}

}  // namespace zt
