#include <cstdint>

#include "kernels/common/reduce.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace zt::cpu {
namespace {

// Deterministic for any thread count: the range is cut into kBlocks fixed blocks (independent
// of the thread count), each block sums in 8 double lanes, and the block partials are added in
// block order. No allocation: the partials live on the stack.
template <typename T>
double sum_squares_impl(const T* x, int64_t n) {
  constexpr int kBlocks = 64;
  constexpr int kL = 8;
  double part[kBlocks];
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int blk = 0; blk < kBlocks; ++blk) {
    const int64_t lo = n * blk / kBlocks, hi = n * (blk + 1) / kBlocks;
    double acc[kL] = {};
    int64_t i = lo;
    for (; i + kL <= hi; i += kL)
      for (int l = 0; l < kL; ++l) acc[l] += square_f64(x[i + l]);
    for (int l = 0; i + l < hi; ++l) acc[l] += square_f64(x[i + l]);
    part[blk] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
  }
  double s = 0;
  for (int blk = 0; blk < kBlocks; ++blk) s += part[blk];
  return s;
}

template <typename T>
bool has_inf_or_nan_impl(const T* x, int64_t n) {
  bool bad = false;
#pragma omp parallel for schedule(static) reduction(|| : bad) if (n >= detail::kParallelMin)
  for (int64_t i = 0; i < n; ++i) bad = bad || is_inf_or_nan(x[i]);
  return bad;
}

}  // namespace

double Kernels::sum_squares(const float* x, int64_t n, Exec) {
  return sum_squares_impl(x, n);
}
double Kernels::sum_squares(const bf16* x, int64_t n, Exec) {
  return sum_squares_impl(x, n);
}
double Kernels::sum_squares(const fp16* x, int64_t n, Exec) {
  return sum_squares_impl(x, n);
}

bool Kernels::has_inf_or_nan(const float* x, int64_t n, Exec) {
  return has_inf_or_nan_impl(x, n);
}
bool Kernels::has_inf_or_nan(const bf16* x, int64_t n, Exec) {
  return has_inf_or_nan_impl(x, n);
}
bool Kernels::has_inf_or_nan(const fp16* x, int64_t n, Exec) {
  return has_inf_or_nan_impl(x, n);
}

}  // namespace zt::cpu
