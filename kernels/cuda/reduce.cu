// sum_squares and has_inf_or_nan through cub::DeviceReduce over a transform iterator
// (square_f64 and is_inf_or_nan from kernels/common/reduce.h). DeviceReduce is run-to-run
// deterministic on a given device (a fixed reduction tree, no atomics); its order differs from
// the CPU backend's, so sums agree to rounding, not bit for bit.
//
// CUB versions before 2.x take an int item count, so long ranges are reduced in chunks of
// kChunk items whose partials are added on the host in chunk order. Temp storage and the partial
// results live in the grow-only Scratch::Reduce buffer (context.h), not allocated per call.
#include <thrust/iterator/transform_iterator.h>

#include <cstdint>
#include <cub/device/device_reduce.cuh>
#include <vector>

#include "kernels/common/reduce.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_check.h"
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

}  // namespace
}  // namespace detail

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
