// Token + position embedding. Backward is deterministic without atomics and adds in the CPU
// backend's order, so its results are bit-identical to kernels/cpu/embedding.cpp:
//   dwte: the token positions are stably radix-sorted by local vocab row (cub::DeviceRadixSort,
//         values = position), so each row's positions come out in (b, t) order; the block at a
//         segment's first position adds the segment's dout rows onto dwte in that order.
//   dwpe: one thread per (t, c) adds dout[b, t, c] for b = 0..B-1.
// Scratch: 4 B*T int32 (keys and values, in and out) + the sort's temp storage, in the
// grow-only Scratch::Embedding buffer (context.h).
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace zt::cuda {
namespace detail {
namespace {

constexpr int kSegThreads = 256;

// The block of sorted position i works only when i starts a segment of an in-range row.
template <typename E>
__global__ void dwte_segments_kernel(float* dwte, const E* dout, const int32_t* keys,
                                     const int32_t* pos, int BT, int C, int v_local) {
  const int i = blockIdx.x;
  const int row = keys[i];
  if (row >= v_local || (i > 0 && keys[i - 1] == row)) return;
  int end = i + 1;
  while (end < BT && keys[end] == row) ++end;
  float* g = dwte + int64_t{row} * C;
  for (int c = threadIdx.x; c < C; c += kSegThreads) {
    float acc = g[c];
    for (int k = i; k < end; ++k) acc += to_float(dout[int64_t{pos[k]} * C + c]);
    g[c] = acc;
  }
}

size_t align_up(size_t n) {
  return (n + 255) / 256 * 256;
}

int bits_for(int v) {  // bits to represent 0..v
  int b = 1;
  while ((int64_t{1} << b) <= v) ++b;
  return b;
}

void check_shape(const char* what, int B, int T, int C, int v_local) {
  ZT_CU_CHECK(B > 0 && T > 0 && C > 0 && v_local >= 0,
              cat(what, ": bad shape B=", B, " T=", T, " C=", C, " v_local=", v_local));
}

}  // namespace
}  // namespace detail

template <typename E>
void Kernels::embedding_forward(E* out, const int32_t* tokens, const E* wte, const E* wpe, int B,
                                int T, int C, int v_begin, int v_local, cudaStream_t stream) {
  detail::check_shape("embedding_forward", B, T, C, v_local);
  detail::for_each(int64_t{B} * T * C, stream, [=] __device__(int64_t i) {
    const int64_t bt = i / C;
    const int c = static_cast<int>(i % C);
    const int64_t row = int64_t{tokens[bt]} - v_begin;
    const bool in_range = row >= 0 && row < v_local;
    // The CPU backend's cases, so a missing term is absent rather than an added 0 (-0 stays -0).
    if (in_range && wpe != nullptr)
      out[i] = from_float<E>(to_float(wte[row * C + c]) + to_float(wpe[(bt % T) * C + c]));
    else if (in_range)
      out[i] = wte[row * C + c];
    else if (wpe != nullptr)
      out[i] = wpe[(bt % T) * C + c];
    else
      out[i] = from_float<E>(0.0f);
  });
}

template <typename E>
void Kernels::embedding_backward(float* dwte, float* dwpe, const E* dout, const int32_t* tokens,
                                 int B, int T, int C, int v_begin, int v_local,
                                 cudaStream_t stream) {
  detail::check_shape("embedding_backward", B, T, C, v_local);
  const int BT = B * T;
  if (v_local > 0) {
    const size_t ints = detail::align_up(sizeof(int32_t) * static_cast<size_t>(BT));
    const int end_bit = detail::bits_for(v_local);
    size_t temp_bytes = 0;
    ZT_CU_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
        nullptr, temp_bytes, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
        static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), BT, 0, end_bit,
        stream));
    char* buf = static_cast<char*>(
        detail::scratch(detail::Scratch::Embedding, 4 * ints + temp_bytes, stream));
    auto* keys_in = reinterpret_cast<int32_t*>(buf);
    auto* keys_out = reinterpret_cast<int32_t*>(buf + ints);
    auto* pos_in = reinterpret_cast<int32_t*>(buf + 2 * ints);
    auto* pos_out = reinterpret_cast<int32_t*>(buf + 3 * ints);
    // Key = local row, or v_local for tokens of other ranks' shards (sorted last, skipped).
    detail::for_each(BT, stream, [=] __device__(int64_t i) {
      const int64_t row = int64_t{tokens[i]} - v_begin;
      keys_in[i] = row >= 0 && row < v_local ? static_cast<int32_t>(row) : v_local;
      pos_in[i] = static_cast<int32_t>(i);
    });
    ZT_CU_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(buf + 4 * ints, temp_bytes, keys_in, keys_out,
                                                     pos_in, pos_out, BT, 0, end_bit, stream));
    detail::dwte_segments_kernel<<<BT, detail::kSegThreads, 0, stream>>>(dwte, dout, keys_out,
                                                                         pos_out, BT, C, v_local);
    ZT_CU_CUDA_CHECK(cudaGetLastError());
  }
  if (dwpe != nullptr)
    detail::for_each(int64_t{T} * C, stream, [=] __device__(int64_t i) {
      float acc = dwpe[i];
      for (int b = 0; b < B; ++b) acc += to_float(dout[int64_t{b} * T * C + i]);
      dwpe[i] = acc;
    });
}

#define ZT_EMBEDDING(E)                                                                            \
  template void Kernels::embedding_forward<E>(E*, const int32_t*, const E*, const E*, int, int,    \
                                              int, int, int, cudaStream_t);                        \
  template void Kernels::embedding_backward<E>(float*, float*, const E*, const int32_t*, int, int, \
                                               int, int, int, cudaStream_t);
ZT_EMBEDDING(float)
ZT_EMBEDDING(bf16)
ZT_EMBEDDING(fp16)
#undef ZT_EMBEDDING

}  // namespace zt::cuda
