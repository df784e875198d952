#pragma once
// Internals of cpu::Kernels::gemm (kernels/cpu/ops.h), exposed so tests and benchmarks can pick the
// path explicitly: both paths are then tested on a CPU that would always take oneDNN.
//
// Paths:
//   - Onednn: oneDNN's matmul (brgemm kernels), fp32 accumulation: bf16 operands on AVX512-BF16 /
//     AMX, fp32 operands on AVX-512. Primitives are cached per (shape, transposes, strides,
//     operand and result types, alpha, beta) in a bounded LRU shared by all threads
//     (kOnednnCacheCapacity entries).
//   - Fallback: tiles of op(A) and op(B) are converted to fp32 in a per-thread scratch of
//     constant size and multiplied with OpenBLAS sgemm, K-blocked, accumulating each C tile in
//     fp32 (a half C is rounded once, after the last K tile). fp32 operands skip the conversion
//     and go to sgemm whole.
//
// Auto takes oneDNN for bf16 wherever it runs bf16, and for the model's large dense fp32
// products (onednn_fp32_takes): in the fp32 training step of the Llama-shaped bench config
// (bench_step, 2 threads, an AVX-512 AMD EPYC) oneDNN's f32 matmul made the step 0.84-0.90 of
// OpenBLAS sgemm's in interleaved pairs (docs/results/precision.md), although the two reach the
// same GFLOP/s on those shapes alone (bench_gemm). A product inside a parallel region (attention's
// tiles, whose caller shares out the work) or on a strided view (oneDNN's generic kernel) stays
// on sgemm, and so does a small one (oneDNN's per-call cost).
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
  Auto,      // Onednn for bf16 where onednn_bf16_available() and for onednn_fp32_takes(), else
             // Fallback
  Onednn,    // bf16 operands where onednn_bf16_available(), fp32 where onednn_fp32_preferred();
             // throws elsewhere
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
// True when oneDNN's effective ISA includes AVX-512 (avx512_core), where its f32 brgemm kernels
// run: the CPUs it was measured on. Elsewhere fp32 stays on OpenBLAS.
bool onednn_fp32_preferred();
// Products at least this large (M N K) go to oneDNN under onednn_fp32_takes: 2^24 is about 0.2 ms
// at this machine's rate, against a few microseconds of oneDNN's per-call cost.
inline constexpr double kOnednnFp32MinMacs = double(1 << 24);
// Whether Auto runs this fp32 product on oneDNN: onednn_fp32_preferred(), outside a parallel
// region, dense operands (each leading dimension its row's length) and at least
// kOnednnFp32MinMacs.
bool onednn_fp32_takes(bool trans_a, bool trans_b, int M, int N, int K, int lda, int ldb, int ldc);
// Entries now in the primitive cache (for tests of its bound).
size_t onednn_cache_size();

// cpu::Kernels::gemm with the path (and the fallback's tiles) chosen by the caller.
void gemm_mixed(GemmPath path, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                const void* A, int lda, const void* B, int ldb, float beta, void* C, int ldc,
                DType ab_type, DType c_type, const GemmTiles& tiles = kDefaultTiles);

// The oneDNN path alone (gemm_onednn.cpp); arguments already validated, M, N, K > 0; operands
// bf16 or fp32, the result fp32 or the operands' type.
void gemm_onednn(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A,
                 int lda, const void* B, int ldb, float beta, void* C, int ldc, DType ab_type,
                 DType c_type);

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
