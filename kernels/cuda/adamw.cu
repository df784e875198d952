// AdamW on fp32 master parameters (adamw_update from kernels/common/adamw.h, the same constants
// as the CPU backend from adamw_consts), single tensor and multi-tensor.
#include <cstdint>

#include "kernels/common/adamw.h"
#include "kernels/common/cast.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

// blockIdx.y picks the tensor, blockIdx.x and the threads stride over its elements. The
// descriptors are read from device memory, so the host never needs the sizes.
template <typename W>
__global__ void adamw_multi_kernel(const AdamWTensor* tensors, AdamWConsts c) {
  const AdamWTensor t = tensors[blockIdx.y];
  W* working = static_cast<W*>(t.working);
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < t.n; i += stride) {
    float p = t.param[i], m = t.m[i], v = t.v[i];
    adamw_update(p, m, v, t.grad[i], c);
    t.param[i] = p;
    t.m[i] = m;
    t.v[i] = v;
    if (working != nullptr) working[i] = from_float<W>(p);
  }
}

bool is_device_pointer(const void* p) {
  cudaPointerAttributes attr{};
  ZT_CU_CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

void check_step(const AdamWParams& p) {
  ZT_CU_CHECK(p.step >= 1, cat("adamw: step ", p.step, " < 1"));
}

}  // namespace
}  // namespace detail

void Kernels::adamw(float* param, float* m, float* v, const float* g, int64_t n,
                    const AdamWParams& p, cudaStream_t stream) {
  detail::check_step(p);
  const AdamWConsts c = adamw_consts(p);
  detail::for_each(n, stream,
                   [=] __device__(int64_t i) { adamw_update(param[i], m[i], v[i], g[i], c); });
}

void adamw_multi(const AdamWTensor* tensors, int count, DType working_type, const AdamWParams& p,
                 cudaStream_t stream) {
  detail::check_step(p);
  ZT_CU_CHECK(count >= 0, detail::cat("adamw_multi: count ", count, " < 0"));
  if (count == 0) return;
  ZT_CU_CHECK(
      working_type == DType::BF16 || working_type == DType::F16,
      detail::cat("adamw_multi: working copy type ", dtype_name(working_type), " (bf16 or fp16)"));
  const AdamWConsts c = adamw_consts(p);
  const AdamWTensor* d_tensors = tensors;
  if (!detail::is_device_pointer(tensors)) {
    const size_t bytes = sizeof(AdamWTensor) * static_cast<size_t>(count);
    auto* buf = static_cast<AdamWTensor*>(detail::scratch(detail::Scratch::AdamW, bytes, stream));
    ZT_CU_CUDA_CHECK(cudaMemcpyAsync(buf, tensors, bytes, cudaMemcpyHostToDevice, stream));
    d_tensors = buf;
  }
  // gridDim.y is at most 65535: larger counts take several launches.
  constexpr int kMaxY = 65535;
  const int blocks_x = detail::sm_count() * 4;
  for (int first = 0; first < count; first += kMaxY) {
    const int n = count - first < kMaxY ? count - first : kMaxY;
    const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(n));
    if (working_type == DType::BF16)
      detail::adamw_multi_kernel<bf16><<<grid, detail::kThreads, 0, stream>>>(d_tensors + first, c);
    else
      detail::adamw_multi_kernel<fp16><<<grid, detail::kThreads, 0, stream>>>(d_tensors + first, c);
    ZT_CU_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace zt::cuda
