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

// Runs OpenBLAS single-threaded in this scope (for GEMMs issued from inside an OpenMP loop)
// and restores the previous thread count on exit. The count is process-global, so no other
// thread may call BLAS while one of these is alive.
class BlasSingleThreaded {
 public:
  BlasSingleThreaded() : prev_(openblas_get_num_threads()) {
    if (prev_ != 1) openblas_set_num_threads(1);
  }
  ~BlasSingleThreaded() {
    if (prev_ != 1) openblas_set_num_threads(prev_);
  }
  BlasSingleThreaded(const BlasSingleThreaded&) = delete;
  BlasSingleThreaded& operator=(const BlasSingleThreaded&) = delete;

 private:
  int prev_;
};

}  // namespace zt::cpu::detail
