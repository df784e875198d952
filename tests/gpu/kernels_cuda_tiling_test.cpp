// The CUDA attention kernels' shared-memory sizing and alignment, checked on the host for every
// head size (no GPU needed: attention_tiling touches no device). At each target's opt-in limit
// per block — V100 96 KiB, A100 163 KiB (of its 164 KiB per SM), H100 227 KiB — every head size up
// to 128 gets a tile in every precision, forward and backward, and its dynamic shared memory is
// within the limit; every carve is 128-byte aligned with WMMA-legal leading dimensions; a head size
// too large for a target gets no tile (the kernels then refuse with one line). The largest head
// size each target takes is printed.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "kernels/cuda/ops.h"

namespace zt {
namespace {

struct Target {
  const char* name;
  size_t limit;  // bytes of dynamic shared memory one block may opt into
};
constexpr Target kTargets[] = {{"V100", 96 * 1024}, {"A100", 163 * 1024}, {"H100", 227 * 1024}};
constexpr DType kTypes[] = {DType::F32, DType::BF16, DType::F16};

TEST(CudaAttentionTiling, EveryHeadSizeUpTo128FitsEveryTargetAligned) {
  for (const Target& target : kTargets)
    for (DType t : kTypes) {
      int largest = 0;
      for (int hd = 1; hd <= 512; ++hd) {
        const cuda::AttentionTiling a = cuda::attention_tiling(hd, t, target.limit);
        const bool fits = a.forward_tile > 0 && a.backward_tile > 0;
        if (hd <= 128) {
          EXPECT_TRUE(fits) << target.name << " " << dtype_name(t) << " hd " << hd;
        }
        if (!fits) continue;
        largest = hd;
        EXPECT_LE(a.forward_bytes, target.limit) << target.name << " hd " << hd;
        EXPECT_LE(a.backward_bytes, target.limit) << target.name << " hd " << hd;
        EXPECT_LE(a.dq_bytes, a.backward_bytes) << target.name << " hd " << hd;
        EXPECT_TRUE(a.aligned) << target.name << " " << dtype_name(t) << " hd " << hd;
      }
      std::printf("%s %s: head sizes up to %d fit\n", target.name,
                  std::string(dtype_name(t)).c_str(), largest);
    }
}

// Tiles shrink as the head grows, and the largest tile is taken while it fits.
TEST(CudaAttentionTiling, TilesAreTheLargestThatFit) {
  for (DType t : kTypes) {
    const cuda::AttentionTiling small = cuda::attention_tiling(64, t, 227 * 1024);
    EXPECT_EQ(small.forward_tile, 64) << dtype_name(t);
    int prev = 64;
    for (int hd = 16; hd <= 256; hd += 16) {
      const cuda::AttentionTiling a = cuda::attention_tiling(hd, t, 96 * 1024);
      if (a.backward_tile == 0) break;
      EXPECT_LE(a.backward_tile, prev) << dtype_name(t) << " hd " << hd;
      prev = a.backward_tile;
      // The next larger tile would not fit (or there is none).
      if (a.backward_tile < 64) {
        const cuda::AttentionTiling big = cuda::attention_tiling(hd, t, a.backward_bytes * 4);
        EXPECT_GT(big.backward_bytes, 96u * 1024u) << dtype_name(t) << " hd " << hd;
      }
    }
  }
}

TEST(CudaAttentionTiling, AHeadTooLargeGetsNoTile) {
  const cuda::AttentionTiling a = cuda::attention_tiling(2048, DType::F32, 96 * 1024);
  EXPECT_EQ(a.forward_tile, 0);
  EXPECT_EQ(a.backward_tile, 0);
}

}  // namespace
}  // namespace zt
