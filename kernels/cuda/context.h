#pragma once
// State of the CUDA kernels: per thread and device the cuBLAS and cuBLASLt handles (created on
// first use, owned by thread_local RAII holders, freed when the thread exits); process-wide the
// GEMM workspaces and grow-only scratch buffers, keyed by (device, thread, stream, purpose).
//
// Device memory of these buffers comes from the MemoryPool of a ScratchPoolScope (category
// Buffers) while one is open for the device, else from cudaMalloc (the kernel tests):
//   - the GEMM workspace: kLtWorkspaceBytes per (thread, device, stream), given to cuBLASLt and,
//     through cublasSetWorkspace, to cuBLAS (so cuBLAS allocates none of its own); a scope
//     allocates its stream's at once, so the plan counts it from the start;
//   - Scratch buffers per (thread, device, stream, purpose), grown to the largest request seen:
//       Reduce        CUB DeviceReduce temp storage + partial results (sum_squares,
//                     has_inf_or_nan)
//       Embedding     4 * B*T int32 keys/values + CUB radix-sort temp (embedding_backward)
//       ColumnReduce  ceil(N/256) * K * C floats of per-chunk column partials (db of
//                     linear_backward: K = 1; dw and db of layernorm_backward: K = 2)
//     They reach their size in the first step; the planner does not count them yet
//     (grown_scratch_bytes() says how much they hold).
// Growing a buffer first waits for its stream (work still queued on the old one finishes).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/backend_memory.h"

namespace zt {
class MemoryPool;  // src/core/memory_pool.h (not included: .cu files include this header)
}  // namespace zt

namespace zt::cuda {

// While it lives, the kernels' buffers on the current device come from `pool` (category
// Buffers), and `stream`'s GEMM workspace is allocated at once. Its end returns every buffer
// taken from the pool (the pool must outlive it). One per device at a time.
class ScratchPoolScope {
 public:
  ScratchPoolScope(MemoryPool& pool, cudaStream_t stream);
  ~ScratchPoolScope();
  ScratchPoolScope(const ScratchPoolScope&) = delete;
  ScratchPoolScope& operator=(const ScratchPoolScope&) = delete;

 private:
  int device_ = 0;
};

// Bytes the grow-only Scratch buffers (not the GEMM workspace) of the current device hold from
// the scope's pool: now while a scope is open, else when the last scope ended.
size_t grown_scratch_bytes();

}  // namespace zt::cuda

namespace zt::cuda::detail {

inline constexpr size_t kLtWorkspaceBytes = kCudaGemmWorkspaceBytes;

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

enum class Scratch { Reduce, Embedding, ColumnReduce };
// At least `bytes` of device memory (256-byte aligned) reserved for `purpose` on `stream`; the
// contents are undefined. Valid until the next call with the same purpose and stream.
void* scratch(Scratch purpose, size_t bytes, cudaStream_t stream);

// Number of multiprocessors of the current device (cached), for sizing grid-stride launches.
int sm_count();

}  // namespace zt::cuda::detail
