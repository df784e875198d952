#include <cstdint>

#include "kernels/common/multi_tensor.h"
#include "kernels/common/reduce.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace zt::cpu {
namespace {

// Deterministic for any thread count: the range is cut into kNormBlocks fixed blocks
// (kernels/common/multi_tensor.h, independent of the thread count), each block sums in 8 double
// lanes into part[block], and the caller adds the partials in block order.
template <typename T>
void block_partials(const T* x, int64_t n, double* part) {
  constexpr int kL = 8;
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
  for (int blk = 0; blk < kNormBlocks; ++blk) {
    const int64_t lo = norm_block_begin(n, blk), hi = norm_block_begin(n, blk + 1);
    double acc[kL] = {};
    int64_t i = lo;
    for (; i + kL <= hi; i += kL)
      for (int l = 0; l < kL; ++l) acc[l] += square_f64(x[i + l]);
    for (int l = 0; i + l < hi; ++l) acc[l] += square_f64(x[i + l]);
    part[blk] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
  }
}

double add_partials(const double* part) {
  double s = 0;
  for (int blk = 0; blk < kNormBlocks; ++blk) s += part[blk];
  return s;
}

// No allocation: the partials live on the stack.
template <typename T>
double sum_squares_impl(const T* x, int64_t n) {
  double part[kNormBlocks];
  block_partials(x, n, part);
  return add_partials(part);
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

// Segment by segment, each as sum_squares, added in table order.
template <typename T>
void Kernels::sum_squares_multi(double* out, double* partials, const NormSegment* segs, int count,
                                Exec) {
  double total = 0;
  for (int k = 0; k < count; ++k) {
    block_partials(static_cast<const T*>(segs[k].x), segs[k].n, partials);
    total += add_partials(partials);
  }
  *out = total;
}

template void Kernels::sum_squares_multi<float>(double*, double*, const NormSegment*, int, Exec);
template void Kernels::sum_squares_multi<bf16>(double*, double*, const NormSegment*, int, Exec);
template void Kernels::sum_squares_multi<fp16>(double*, double*, const NormSegment*, int, Exec);

}  // namespace zt::cpu
