#pragma once
// Per-thread, per-device state of the CUDA kernels: the cuBLAS and cuBLASLt handles, the
// cuBLASLt workspace and grow-only scratch buffers. Everything is created on first use and owned
// by thread_local RAII holders (freed when the thread exits, before the CUDA runtime's own
// teardown).
//
// Device memory these kernels allocate themselves (not through MemoryPool yet; the integrator
// will route it there):
//   - cuBLASLt workspace: kLtWorkspaceBytes per (thread, device, stream);
//   - cuBLAS's own default workspace inside each cuBLAS handle (one per thread and device);
//   - Scratch buffers per (thread, device, stream, purpose), grown to the largest request seen:
//       Reduce        CUB DeviceReduce temp storage + partial results (sum_squares,
//                     has_inf_or_nan)
//       Embedding     4 * B*T int32 keys/values + CUB radix-sort temp (embedding_backward)
//       Attention     B*NH*T*T floats, only for attention_forward with dropout and no caller
//                     scratch
//       AdamW         the AdamWTensor descriptors when adamw_multi is handed a host array
//       ColumnReduce  ceil(N/256) * K * C floats of per-chunk column partials (db of
//                     linear_backward: K = 1; dw and db of layernorm_backward: K = 2)
// Growing a scratch buffer frees the old one with cudaFree, which waits for the device, so work
// still queued on it finishes first.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace zt::cuda::detail {

inline constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;  // Hopper's recommended 32 MiB

// The calling thread's cuBLAS handle for the current device, bound to `stream`.
cublasHandle_t blas_handle(cudaStream_t stream);
// The calling thread's cuBLASLt handle for the current device.
cublasLtHandle_t lt_handle();
// The cuBLASLt workspace of (thread, current device, stream): kLtWorkspaceBytes.
void* lt_workspace(cudaStream_t stream);

// The cuBLASLt objects of one matmul problem, built once and reused: the operation descriptor
// (compute type, transposes, epilogue, aux leading dimension), the three matrix layouts, the
// preference (workspace, operand alignments) and the heuristic's answer. Per call only the
// pointer attributes (bias, aux) are set on `op`.
struct LtDestroy {
  void operator()(cublasLtMatmulDescOpaque_t* d) const;
  void operator()(cublasLtMatrixLayoutOpaque_t* d) const;
  void operator()(cublasLtMatmulPreferenceOpaque_t* d) const;
};
struct LtPlan {
  std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDestroy> op;
  std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDestroy> a, b, c;
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtDestroy> pref;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;  // false: cuBLASLt has no algorithm for this problem (also remembered)
};
// Everything the plan depends on: sizes, transposes, leading dimensions, types, compute type,
// epilogue, aux leading dimension and the operand alignments (kernels/cuda/gemm.cu fills it).
using LtPlanKey = std::array<int64_t, 17>;
// Plans per (thread, device): at most kLtPlanCacheEntries, the least recently used dropped when a
// new one does not fit. A training run has a few dozen problem shapes.
inline constexpr size_t kLtPlanCacheEntries = 256;
// The cached plan for `key` on the current device, or null.
LtPlan* lt_plan_find(const LtPlanKey& key);
// Stores `plan` for `key` on the current device and returns it (valid until the next insert).
LtPlan& lt_plan_insert(const LtPlanKey& key, LtPlan&& plan);
// Number of cached plans on the current device (tests).
size_t lt_plan_count();

enum class Scratch { Reduce, Embedding, Attention, AdamW, ColumnReduce };
// At least `bytes` of device memory (256-byte aligned) reserved for `purpose` on `stream`; the
// contents are undefined. Valid until the next call with the same purpose and stream.
void* scratch(Scratch purpose, size_t bytes, cudaStream_t stream);

// Number of multiprocessors of the current device (cached), for sizing grid-stride launches.
int sm_count();

}  // namespace zt::cuda::detail
