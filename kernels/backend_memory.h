#pragma once
// Device memory a backend holds for itself, outside the tensors the stack allocates: declared
// here, without CUDA headers, so the planner counts the same bytes the backend takes.
#include <cstddef>

namespace zt {

// The CUDA backend's GEMM workspace: one per stream that runs GEMMs (the compute stream in
// training), shared by cuBLASLt and cuBLAS, taken from the device MemoryPool (category Buffers)
// when the backend starts. 32 MiB: NVIDIA's recommendation for Hopper (cuBLAS docs, "cuBLAS
// workspace"); Ampere needs 4 MiB.
inline constexpr size_t kCudaGemmWorkspaceBytes = size_t{32} << 20;

}  // namespace zt
