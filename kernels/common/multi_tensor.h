#pragma once
// The segment tables of the multi-tensor kernels (kernels/ops.inc sum_squares_multi and
// adamw_multi): one entry per run of a flat buffer, in host memory. A backend takes them
// kMultiTensorGroup at a time; CUDA passes each group by value as a kernel argument (at most
// 64 · 48 bytes, under the 4 KiB parameter limit), so no table lives in device memory, nothing
// is uploaded and nothing waits: one launch per group, a few for a whole optimizer shard.
#include <cstdint>

#include "src/core/hd.h"

namespace zt {

// A run of n elements of one dtype (the kernel's template argument) whose squares are summed.
struct NormSegment {
  const void* x;
  int64_t n;
};

// A run of n fp32 master parameters and their Adam moments, with their gradient (n elements of
// the kernel's gradient dtype) and the weight decay of the parameter it belongs to.
struct AdamWSegment {
  float* param;
  float* m;
  float* v;
  const void* grad;
  int64_t n;
  float weight_decay;
};

// Segments per launch.
inline constexpr int kMultiTensorGroup = 64;

// sum_squares cuts each segment into this many fixed blocks (independent of threads and grid):
// the device scratch of sum_squares_multi is kMultiTensorGroup · kNormBlocks doubles, whatever
// the number of segments (a constant-size buffer).
inline constexpr int kNormBlocks = 64;
inline constexpr int64_t kNormPartials = int64_t{kMultiTensorGroup} * kNormBlocks;

// Block b of a segment of n elements: [lo, hi).
ZT_HD int64_t norm_block_begin(int64_t n, int b) {
  return n * b / kNormBlocks;
}

}  // namespace zt
