#pragma once
// Internals of cpu::Kernels::gemm (kernels/cpu/ops.h), exposed so tests and benchmarks can pick the
// path explicitly: both paths are then tested on a CPU that would always take oneDNN.
//
// Paths:
//   - Onednn: oneDNN's matmul (brgemm kernels on AVX512-BF16 / AMX), bf16 operands only, fp32
//     accumulation. Primitives are cached per (shape, transposes, strides, result type, alpha,
//     beta) in a bounded LRU shared by all threads (kOnednnCacheCapacity entries).
//   - Fallback: tiles of op(A) and op(B) are converted to fp32 in a per-thread scratch of
//     constant size and multiplied with OpenBLAS sgemm, K-blocked, accumulating each C tile in
//     fp32 (a half C is rounded once, after the last K tile). fp32 operands skip the conversion
//     and go to sgemm whole.
//
// Host memory these kernels hold themselves (not through MemoryPool):
//   - the fallback scratch: kFallbackScratchBytes per thread that ever ran the fallback (each
//     OpenMP thread of the team that shares out C's tiles), allocated on first use and kept until
//     the thread exits;
//   - oneDNN's primitives (JIT code, at most kOnednnCacheCapacity of ours plus oneDNN's own
//     primitive cache);
//   - their scratchpad: one buffer per thread that ran a primitive, grown to the largest
//     scratchpad its primitives asked for (user scratchpad mode: the library's own is shared
//     between primitives in this oneDNN build, so concurrent calls from several threads would
//     share it).
#include <cstddef>
#include <string>

#include "src/core/dtype.h"

namespace zt::cpu::detail {

enum class GemmPath {
  Auto,      // Onednn for bf16 operands when onednn_bf16_available(), else Fallback
  Onednn,    // bf16 operands only; throws where !onednn_bf16_available()
  Fallback,  // any operand type
};

// Block sizes of the fallback: C is computed in tiles of at most m x n (smaller where that gives
// every OpenMP thread a share of C), K in steps of k. Each is at most the default (the scratch is
// sized for the defaults); tests pass smaller ones to cross many tile edges with small matrices.
struct GemmTiles {
  int m = 512, n = 512, k = 512;
};
// Default tiles: op(A) tile + op(B) tile + C tile, all fp32 = 3 MiB. 512 is where OpenBLAS sgemm
// is close to its large-matrix rate, and the conversion is then ~1/1000 of the FLOPs.
inline constexpr GemmTiles kDefaultTiles{};
inline constexpr size_t kFallbackScratchFloats = size_t{kDefaultTiles.m} * kDefaultTiles.k +
                                                 size_t{kDefaultTiles.k} * kDefaultTiles.n +
                                                 size_t{kDefaultTiles.m} * kDefaultTiles.n;
inline constexpr size_t kFallbackScratchBytes = kFallbackScratchFloats * sizeof(float);

inline constexpr size_t kOnednnCacheCapacity = 256;

// True when oneDNN's effective ISA includes AVX512-BF16 (AMX includes it). Respects oneDNN's
// ONEDNN_MAX_CPU_ISA environment variable, since oneDNN itself does.
bool onednn_bf16_available();
// Entries now in the primitive cache (for tests of its bound).
size_t onednn_cache_size();

// cpu::Kernels::gemm with the path (and the fallback's tiles) chosen by the caller.
void gemm_mixed(GemmPath path, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                const void* A, int lda, const void* B, int ldb, float beta, void* C, int ldc,
                DType ab_type, DType c_type, const GemmTiles& tiles = kDefaultTiles);

// The oneDNN path alone (gemm_onednn.cpp); arguments already validated, M, N, K > 0.
void gemm_onednn(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A,
                 int lda, const void* B, int ldb, float beta, void* C, int ldc, DType c_type);

// `batch` bf16 products in one oneDNN primitive, each matrix of the batch stored interleaved
// with the others row by row: an R x Cn matrix of the batch is [R][batch][Cn] (row r of
// problem p at (r * batch + p) * Cn), or [Cn][batch][R] when stored transposed. C[p] = alpha
// op(A[p]) op(B[p]) + beta C[p], op(A) M x K, op(B) K x N, C [M][batch][N] (fp32 or bf16).
// oneDNN 2.6 runs such dense layouts (its acbd/adbc) on its brgemm kernels; a leading dimension
// larger than the row (a head's view inside [B, T, 3C]) sends even a 2-D product to the
// generic gemm:jit kernel, several times slower at attention's tile sizes.
// Throws where !onednn_bf16_available().
void gemm_onednn_interleaved(bool trans_a, bool trans_b, int batch, int M, int N, int K,
                             float alpha, const void* A, const void* B, float beta, void* C,
                             DType c_type);

// oneDNN's effective ISA (dnnl::get_effective_cpu_isa), for benchmark reports.
std::string onednn_isa_name();

}  // namespace zt::cpu::detail
