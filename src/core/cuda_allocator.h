#pragma once
// The CUDA backend's allocators, both CachingAllocators (caching_allocator.h) over CUDA slabs:
//   make_cuda_allocator    device memory (cudaMalloc slabs); device() == Device::Cuda
//   make_pinned_allocator  page-locked host memory (cudaHostAlloc slabs) for --cpu-checkpointing:
//                          it is host memory, so device() == Device::Cpu, but copies to and from
//                          the GPU run asynchronously at full PCIe / NVLink-C2C speed
// Give them to a MemoryPool, which counts every byte by category as on the host.
//
// Zero-fill (the same zeroed start as the host allocator). A device block is zeroed with
// cudaMemsetAsync on `stream`, and allocate() then synchronises that stream unless
// async_zero_fill is set. Pass the compute stream the memory is used on (nullptr means the legacy
// default stream, right only when the kernels run there): the memset is then ordered after every
// kernel already queued on it, including kernels still using a block that was freed right after
// their launch and is now handed out again (the freed block is reused at once; the stream keeps
// the order). Synchronising additionally makes the zeros visible to every other stream and to
// host copies before allocate() returns; training allocates in its first step only (buffers are
// reused), so that cost is paid once. With async_zero_fill the memset is ordered only on
// `stream`: valid when every user of the memory runs on it or waits on it.
// A block freed while another stream (communication) still uses it is the caller's bug, as on
// the host: Handle::wait() comes before the tensor is released.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "src/core/caching_allocator.h"

namespace zt {

struct CudaAllocatorOptions {
  size_t fixed_capacity = 0;        // --device-memory: one slab, first fit, never grows
  size_t slab_bytes = 64ull << 20;  // growing mode: the smallest cudaMalloc
  cudaStream_t stream = nullptr;    // where blocks are zeroed (see above)
  bool async_zero_fill = false;
};

// On the current device (cuda::select_device first). Throws when a fixed capacity cannot be
// reserved.
std::unique_ptr<CachingAllocator> make_cuda_allocator(const CudaAllocatorOptions& opts = {});

std::unique_ptr<CachingAllocator> make_pinned_allocator(size_t slab_bytes = 64ull << 20);

}  // namespace zt
