#pragma once
// A device tensor holding a host vector, allocated from a test's device pool, and a way to read
// it back: the operands of the NCCL tests.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "src/core/cuda_check.h"
#include "src/core/memory_pool.h"
#include "src/core/tensor.h"

namespace zt::gpu_test {

template <typename T>
struct DeviceVec {
  DeviceVec(const std::vector<T>& v, DType dtype, MemoryPool& pool)
      : buf(pool.allocate(v.size() * sizeof(T), MemCategory::Buffers)),
        t(buf.view(Shape{static_cast<int64_t>(v.size())}, dtype)) {
    ZT_CUDA_CHECK(cudaMemcpy(buf.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    // A pageable copy may still be in DMA when cudaMemcpy returns, and the legacy stream it ran
    // on does not order non-blocking streams: finish it before a test uses its own streams.
    ZT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::vector<T> host() const {
    std::vector<T> h(static_cast<size_t>(t.numel()));
    ZT_CUDA_CHECK(cudaMemcpy(h.data(), buf.data(), h.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  Buffer buf;
  Tensor t;
};

}  // namespace zt::gpu_test
