// AdamW on fp32 master parameters (adamw_update from kernels/common/adamw.h, the same constants
// as the CPU backend from adamw_consts), single tensor and multi-tensor (one launch per
// kMultiTensorGroup segments, the group passed by value).
#include <cstdint>

#include "kernels/common/adamw.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

// One group of the table, by value: the kernel reads it from its parameters.
struct AdamWGroup {
  AdamWSegment seg[kMultiTensorGroup];
};
static_assert(sizeof(AdamWGroup) + sizeof(AdamWConsts) <= 4096, "kernel parameters over 4 KiB");

// blockIdx.y picks the segment, blockIdx.x and the threads stride over its elements.
template <typename G>
__global__ void adamw_multi_kernel(const AdamWGroup group, AdamWConsts c) {
  const AdamWSegment s = group.seg[blockIdx.y];
  c.weight_decay = s.weight_decay;
  const G* g = static_cast<const G*>(s.grad);
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < s.n; i += stride) {
    float p = s.param[i], m = s.m[i], v = s.v[i];
    adamw_update(p, m, v, to_float(g[i]), c);
    s.param[i] = p;
    s.m[i] = m;
    s.v[i] = v;
  }
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

template <typename G>
void Kernels::adamw_multi(const AdamWSegment* segs, int count, const AdamWParams& p,
                          cudaStream_t stream) {
  detail::check_step(p);
  ZT_CU_CHECK(count >= 0, detail::cat("adamw_multi: count ", count, " < 0"));
  const AdamWConsts c = adamw_consts(p);
  const int blocks_x = detail::sm_count() * 4;
  for (int base = 0; base < count; base += kMultiTensorGroup) {
    const int n = count - base < kMultiTensorGroup ? count - base : kMultiTensorGroup;
    detail::AdamWGroup group{};
    for (int k = 0; k < n; ++k) group.seg[k] = segs[base + k];
    const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(n));
    detail::adamw_multi_kernel<G><<<grid, detail::kThreads, 0, stream>>>(group, c);
    ZT_CU_CUDA_CHECK(cudaGetLastError());
  }
}

template void Kernels::adamw_multi<float>(const AdamWSegment*, int, const AdamWParams&,
                                          cudaStream_t);
template void Kernels::adamw_multi<bf16>(const AdamWSegment*, int, const AdamWParams&,
                                         cudaStream_t);
template void Kernels::adamw_multi<fp16>(const AdamWSegment*, int, const AdamWParams&,
                                         cudaStream_t);

}  // namespace zt::cuda
