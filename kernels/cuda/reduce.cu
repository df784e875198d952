// sum_squares and has_inf_or_nan through cub::DeviceReduce over a transform iterator
// (square_f64 and is_inf_or_nan from kernels/common/reduce.h). DeviceReduce is run-to-run
// deterministic on a given device (a fixed reduction tree, no atomics); its order differs from
// the CPU backend's, so sums agree to rounding, not bit for bit.
//
// CUB versions before 2.x take an int item count, so long ranges are reduced in chunks of
// kChunk items whose partials are added on the host in chunk order. Temp storage and the partial
// results live in the grow-only Scratch::Reduce buffer (context.h), not allocated per call.
//
// sum_squares_multi is the optimizer's form: two launches per group of kMultiTensorGroup
// segments (the group passed by value), the partials in the caller's scratch, the result left on
// the device (no synchronisation).
#include <thrust/iterator/transform_iterator.h>

#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_reduce.cuh>
#include <vector>

#include "kernels/common/multi_tensor.h"
#include "kernels/common/reduce.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

constexpr int64_t kChunk = int64_t{1} << 30;

template <typename T>
struct SquareOp {
  __host__ __device__ double operator()(T x) const { return square_f64(x); }
};
template <typename T>
struct BadOp {
  __host__ __device__ int operator()(T x) const { return is_inf_or_nan(x) ? 1 : 0; }
};
struct SumOp {
  __host__ __device__ double operator()(double a, double b) const { return a + b; }
};
struct MaxOp {
  __host__ __device__ int operator()(int a, int b) const { return a > b ? a : b; }
};

size_t align_up(size_t n) {
  return (n + 255) / 256 * 256;
}

// Reduces transform(x[i]) with `op` chunk by chunk; returns the per-chunk results.
template <typename R, typename T, typename Transform, typename Op>
std::vector<R> reduce_chunks(const T* x, int64_t n, Transform transform, Op op, R init,
                             cudaStream_t stream) {
  const int64_t chunks = n <= 0 ? 0 : (n + kChunk - 1) / kChunk;
  std::vector<R> out(static_cast<size_t>(chunks), init);
  if (chunks == 0) return out;
  const int first = static_cast<int>(n < kChunk ? n : kChunk);
  auto in = thrust::make_transform_iterator(x, transform);
  size_t temp_bytes = 0;
  ZT_CU_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, temp_bytes, in, static_cast<R*>(nullptr),
                                             first, op, init, stream));
  const size_t res_offset = align_up(temp_bytes);
  char* buf =
      static_cast<char*>(scratch(Scratch::Reduce, res_offset + sizeof(R) * out.size(), stream));
  R* d_res = reinterpret_cast<R*>(buf + res_offset);
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * kChunk;
    const int len = static_cast<int>(n - lo < kChunk ? n - lo : kChunk);
    size_t bytes = temp_bytes;  // the first (largest) chunk's size is enough for the rest
    ZT_CU_CUDA_CHECK(cub::DeviceReduce::Reduce(buf, bytes,
                                               thrust::make_transform_iterator(x + lo, transform),
                                               d_res + c, len, op, init, stream));
  }
  ZT_CU_CUDA_CHECK(
      cudaMemcpyAsync(out.data(), d_res, sizeof(R) * out.size(), cudaMemcpyDeviceToHost, stream));
  ZT_CU_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}

template <typename T>
double sum_squares_impl(const T* x, int64_t n, cudaStream_t stream) {
  double s = 0;
  for (const double p : reduce_chunks(x, n, SquareOp<T>{}, SumOp{}, 0.0, stream)) s += p;
  return s;
}

template <typename T>
bool has_inf_or_nan_impl(const T* x, int64_t n, cudaStream_t stream) {
  for (const int b : reduce_chunks(x, n, BadOp<T>{}, MaxOp{}, 0, stream))
    if (b != 0) return true;
  return false;
}

// One group of the table, by value: the kernels read it from their parameters.
struct NormGroup {
  NormSegment seg[kMultiTensorGroup];
};
static_assert(sizeof(NormGroup) + sizeof(double*) <= 4096, "kernel parameters over 4 KiB");

// Block (b, k) sums the squares of block b of segment k (norm_block_begin, as the CPU cuts it)
// into partials[k·kNormBlocks + b]: per thread in double, then a fixed block tree.
template <typename T>
__global__ void norm_partials_kernel(double* partials, const NormGroup g) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const int k = static_cast<int>(blockIdx.y);
  const NormSegment s = g.seg[k];
  const T* x = static_cast<const T*>(s.x);
  const int b = static_cast<int>(blockIdx.x);
  const int64_t hi = norm_block_begin(s.n, b + 1);
  double acc = 0;
  for (int64_t i = norm_block_begin(s.n, b) + threadIdx.x; i < hi; i += kThreads)
    acc += square_f64(x[i]);
  acc = Reduce(tmp).Sum(acc);
  if (threadIdx.x == 0) partials[int64_t{k} * kNormBlocks + b] = acc;
}

// One block: each thread adds its segments' partials in block order (the segment sum is kept in
// the segment's first slot), then thread 0 adds the segment sums in table order onto *out (onto
// 0 for the first group).
__global__ void norm_total_kernel(double* out, double* partials, int count, bool first) {
  for (int k = static_cast<int>(threadIdx.x); k < count; k += kThreads) {
    double* part = partials + int64_t{k} * kNormBlocks;
    double s = 0;
    for (int b = 0; b < kNormBlocks; ++b) s += part[b];
    part[0] = s;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  double total = first ? 0.0 : *out;
  for (int k = 0; k < count; ++k) total += partials[int64_t{k} * kNormBlocks];
  *out = total;
}

}  // namespace
}  // namespace detail

template <typename T>
void Kernels::sum_squares_multi(double* out, double* partials, const NormSegment* segs, int count,
                                cudaStream_t stream) {
  ZT_CU_CHECK(count >= 0, detail::cat("sum_squares_multi: count ", count, " < 0"));
  if (count == 0) {
    ZT_CU_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(double), stream));
    return;
  }
  // Groups in table order, each adding onto the previous groups' total: the order of the CPU.
  for (int base = 0; base < count; base += kMultiTensorGroup) {
    const int n = count - base < kMultiTensorGroup ? count - base : kMultiTensorGroup;
    detail::NormGroup g{};
    for (int k = 0; k < n; ++k) g.seg[k] = segs[base + k];
    const dim3 grid(kNormBlocks, static_cast<unsigned>(n));
    detail::norm_partials_kernel<T><<<grid, detail::kThreads, 0, stream>>>(partials, g);
    ZT_CU_CUDA_CHECK(cudaGetLastError());
    detail::norm_total_kernel<<<1, detail::kThreads, 0, stream>>>(out, partials, n, base == 0);
    ZT_CU_CUDA_CHECK(cudaGetLastError());
  }
}

template void Kernels::sum_squares_multi<float>(double*, double*, const NormSegment*, int,
                                                cudaStream_t);
template void Kernels::sum_squares_multi<bf16>(double*, double*, const NormSegment*, int,
                                               cudaStream_t);
template void Kernels::sum_squares_multi<fp16>(double*, double*, const NormSegment*, int,
                                               cudaStream_t);

double Kernels::sum_squares(const float* x, int64_t n, cudaStream_t stream) {
  return detail::sum_squares_impl(x, n, stream);
}
double Kernels::sum_squares(const bf16* x, int64_t n, cudaStream_t stream) {
  return detail::sum_squares_impl(x, n, stream);
}
double Kernels::sum_squares(const fp16* x, int64_t n, cudaStream_t stream) {
  return detail::sum_squares_impl(x, n, stream);
}
bool Kernels::has_inf_or_nan(const float* x, int64_t n, cudaStream_t stream) {
  return detail::has_inf_or_nan_impl(x, n, stream);
}
bool Kernels::has_inf_or_nan(const bf16* x, int64_t n, cudaStream_t stream) {
  return detail::has_inf_or_nan_impl(x, n, stream);
}
bool Kernels::has_inf_or_nan(const fp16* x, int64_t n, cudaStream_t stream) {
  return detail::has_inf_or_nan_impl(x, n, stream);
}

}  // namespace zt::cuda
