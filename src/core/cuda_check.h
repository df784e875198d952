#pragma once
// Checking wrappers for the CUDA runtime, cuBLAS/cuBLASLt and NCCL: a failing call throws
// zt::Error naming the call, the file:line and the rank (docs/design/architecture.md,
// Conventions). Only translation units built with the CUDA backend include this header.
#include <cuda_runtime_api.h>

#include "src/core/error.h"

namespace zt::cuda_detail {
// The world rank named in CUDA error messages; set once by the runtime (-1: not yet known).
int& error_rank();
[[noreturn]] void throw_cuda_error(const char* call, const char* what, const char* file, int line);
}  // namespace zt::cuda_detail

#define ZT_CUDA_CHECK(call)                                                                     \
  do {                                                                                          \
    const cudaError_t zt_cuda_status_ = (call);                                                 \
    if (zt_cuda_status_ != cudaSuccess)                                                         \
      ::zt::cuda_detail::throw_cuda_error(#call, cudaGetErrorString(zt_cuda_status_), __FILE__, \
                                          __LINE__);                                            \
  } while (0)
