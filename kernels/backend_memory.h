#pragma once
// Device memory a backend holds for itself, outside the tensors the stack allocates: declared
// here, without CUDA headers, so the planner counts the same bytes the backend takes.
#include <cstddef>

#include "src/core/dtype.h"

namespace zt {

// The CUDA backend's GEMM workspace: one per stream that runs GEMMs (the compute stream in
// training), shared by cuBLASLt and cuBLAS, taken from the device MemoryPool (category Buffers)
// when the backend starts. 32 MiB: NVIDIA's recommendation for Hopper (cuBLAS docs, "cuBLAS
// workspace"); Ampere needs 4 MiB.
inline constexpr size_t kCudaGemmWorkspaceBytes = size_t{32} << 20;

// Memory the CPU kernels take their per-thread scratch from (attention's tiles, and the packed
// head groups and accumulators of its batched bf16 path): `threads` slices of `per_thread` bytes
// at `base`, one per OpenMP thread. A model takes it from its MemoryPool and binds it to the
// calling thread around its passes (ScopedKernelScratch), so those bytes are counted with a
// category and allocated once, not grown on first use. A kernel called with nothing bound (kernel
// tests, generation) uses per-thread heap buffers of the same sizes.
struct KernelScratch {
  void* base = nullptr;
  size_t per_thread = 0;
  int threads = 0;
};

// Binds `s` to the calling thread for this object's lifetime (the previous binding comes back).
class ScopedKernelScratch {
 public:
  explicit ScopedKernelScratch(const KernelScratch& s);
  ~ScopedKernelScratch();
  ScopedKernelScratch(const ScopedKernelScratch&) = delete;
  ScopedKernelScratch& operator=(const ScopedKernelScratch&) = delete;

 private:
  KernelScratch prev_;
};

// Bytes per thread the CPU attention kernels carve for one call over [B, T] with C channels in NH
// query heads sharing NKV key/value heads, in `t` (64-byte multiple): the tiled path's, or the
// batched path's where bf16 runs on oneDNN (this machine's ISA decides, as it does for the
// kernel).
size_t cpu_attention_scratch_per_thread(int B, int T, int C, int NH, int NKV, DType t);
// The same for attention_block_forward and attention_block_backward with Tq query rows.
size_t cpu_attention_block_scratch_per_thread(int Tq, int C, int NH, int NKV, DType t);
// The OpenMP threads the CPU kernels run on (omp_get_max_threads).
int cpu_kernel_threads();

}  // namespace zt
