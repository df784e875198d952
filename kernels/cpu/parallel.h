#pragma once
// Internal helpers for the CPU kernels (not part of the API).
#include <cblas.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "src/core/half.h"

namespace zt::cpu::detail {

// Element-wise loops below this size run on the calling thread: a parallel region costs a few
// microseconds, which is more than the work.
inline constexpr int64_t kParallelMin = 1 << 15;

// A buffer of at least n elements of E owned by the calling thread (the fp32 rows and blocks a
// half kernel computes in): grown to the largest n asked and kept until the thread exits, so the
// kernels allocate nothing in steady state. The pointer is valid until this thread's next call
// with the same (E, Slot); a kernel that needs two buffers of one type at once gives them two
// slots.
template <typename E, int Slot = 0>
E* thread_buffer(size_t n) {
  thread_local std::vector<E> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// A row of n elements widened to fp32: the row itself for fp32 (no copy), else a copy in the
// calling thread's thread_buffer<float, Slot>, so statistics and sums run on one fp32 code path
// whatever T is.
template <int Slot = 0, typename T>
const float* widened_row(const T* x, int n) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    float* buf = thread_buffer<float, Slot>(static_cast<size_t>(n));
    for (int c = 0; c < n; ++c) buf[c] = to_float(x[c]);
    return buf;
  }
}

// Per-channel sums over N rows, deterministic for any thread count: the C channels in fixed
// blocks of kChannelBlock, a block one thread's work (an orphaned `omp for`: call it inside a
// parallel region, or on its own to run on the calling thread), its rows summed in order in fp32
// and the block's K sums then added into out[k][c]. add_row(n, c0, len, acc) adds row n's terms
// for channels [c0, c0 + len) into acc[k][0 .. len).
inline constexpr int kChannelBlock = 64;
template <int K, typename AddRow>
void channel_block_sums(int N, int C, float* const (&out)[K], AddRow add_row) {
  const int nblocks = (C + kChannelBlock - 1) / kChannelBlock;
#pragma omp for schedule(static)
  for (int blk = 0; blk < nblocks; ++blk) {
    const int c0 = blk * kChannelBlock;
    const int len = C - c0 < kChannelBlock ? C - c0 : kChannelBlock;
    float acc[K][kChannelBlock] = {};
    for (int n = 0; n < N; ++n) add_row(n, c0, len, acc);
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < len; ++j) out[k][c0 + j] += acc[k][j];
  }
}

// Runs OpenBLAS single-threaded in this scope (for GEMMs issued from inside an OpenMP loop)
// and restores the previous thread count on exit. The count is process-global, so no other
// thread may call BLAS while one of these is alive. Only a pthread (or sequential) OpenBLAS
// needs it: the OpenMP build already runs a call made inside an active parallel region on the
// calling thread, and its openblas_set_num_threads also sets OpenMP's own count
// (omp_set_num_threads), which would run the very loop this guards on one thread.
class BlasSingleThreaded {
 public:
  BlasSingleThreaded()
      : prev_(openblas_get_parallel() == kOpenMp ? 1 : openblas_get_num_threads()) {
    if (prev_ != 1) openblas_set_num_threads(1);
  }
  ~BlasSingleThreaded() {
    if (prev_ != 1) openblas_set_num_threads(prev_);
  }
  BlasSingleThreaded(const BlasSingleThreaded&) = delete;
  BlasSingleThreaded& operator=(const BlasSingleThreaded&) = delete;

 private:
  static constexpr int kOpenMp = 2;  // openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP
  int prev_;
};

}  // namespace zt::cpu::detail
