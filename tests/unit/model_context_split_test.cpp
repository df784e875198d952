// The context-parallel split of a sample (src/model/context_split.h): rank r holds chunks r and
// 2·cp−1−r; over the group every position is held exactly once; runs cover a rank's rows in
// order with each run's place in the whole batch; the causal attention work is balanced.
#include "src/model/context_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

namespace zt {
namespace {

ContextSplit split(int cp, int rank, int seq) {
  ContextSplit s;
  s.size = cp;
  s.rank = rank;
  s.seq = seq;
  return s;
}

TEST(ContextSplit, EveryPositionOnceOverTheGroup) {
  for (int cp : {1, 2, 3, 4, 8}) {
    const int seq = 2 * cp * 5;
    std::vector<int> held(static_cast<size_t>(seq), 0);
    for (int r = 0; r < cp; ++r) {
      const ContextSplit s = split(cp, r, seq);
      ASSERT_EQ(s.local(), seq / cp);
      for (int t = 0; t < s.local(); ++t) ++held[static_cast<size_t>(s.position(t))];
      if (cp > 1) {
        EXPECT_EQ(s.position(0), r * 5);
        EXPECT_EQ(s.position(5), (2 * cp - 1 - r) * 5);
      }
    }
    for (int h : held) EXPECT_EQ(h, 1) << "cp " << cp;
  }
}

// The causal attention work of a rank's queries (keys at or before each query's position) over
// the whole sequence, against the mean: equal for the pairing, ~1.75x for a contiguous split at
// cp 4 (what the pairing fixes when attention runs on each rank's own queries).
TEST(ContextSplit, CausalWorkIsBalanced) {
  const int cp = 4, seq = 4096;
  std::vector<double> work(cp, 0.0), contiguous(cp, 0.0);
  for (int r = 0; r < cp; ++r) {
    const ContextSplit s = split(cp, r, seq);
    for (int t = 0; t < s.local(); ++t) {
      work[static_cast<size_t>(r)] += s.position(t) + 1;
      contiguous[static_cast<size_t>(r)] += r * s.local() + t + 1;
    }
  }
  const auto ratio = [](const std::vector<double>& w) {
    const double mean = std::accumulate(w.begin(), w.end(), 0.0) / static_cast<double>(w.size());
    return *std::max_element(w.begin(), w.end()) / mean;
  };
  EXPECT_LE(ratio(work), 1.0 + 1e-3);
  EXPECT_GT(ratio(contiguous), 1.7);
}

// Ring attention's blocks (ContextSplit::ring_blocks): over the C steps of every rank each pair
// of a query chunk and a key chunk at or before it is computed exactly once, and the work — the
// 64 x 64 tiles the attention kernels compute, a causal block its lower triangle — is the same on
// every rank at every step (max/mean 1 at cp 4; a contiguous split of the sequence, each rank
// attending with its two adjacent chunks, gives about 1.75).
TEST(ContextSplit, RingBlocksCoverTheCausalMaskOnceWithEvenWork) {
  for (int cp : {2, 3, 4, 8}) {
    const int seq = 4096 * 3, chunks = 2 * cp;
    const ContextSplit any = split(cp, 0, seq);
    const int64_t t = (any.chunk() + 63) / 64;  // tiles along a chunk
    const auto tiles = [&](bool diagonal) { return diagonal ? t * (t + 1) / 2 : t * t; };
    std::vector<int> seen(static_cast<size_t>(chunks * chunks), 0);
    std::vector<double> work(static_cast<size_t>(cp), 0.0);
    for (int step = 0; step < cp; ++step) {
      std::vector<double> at_step(static_cast<size_t>(cp), 0.0);
      for (int r = 0; r < cp; ++r) {
        const ContextSplit s = split(cp, r, seq);
        const int src = (r - step + cp) % cp;
        for (const RingBlock& b : s.ring_blocks(r, src)) {
          const int a = s.chunk_index(r, b.q), k = s.chunk_index(src, b.kv);
          ASSERT_LE(k, a);
          EXPECT_EQ(b.diagonal, a == k);
          ++seen[static_cast<size_t>(a * chunks + k)];
          at_step[static_cast<size_t>(r)] += static_cast<double>(tiles(b.diagonal));
        }
        work[static_cast<size_t>(r)] += at_step[static_cast<size_t>(r)];
      }
      EXPECT_EQ(*std::max_element(at_step.begin(), at_step.end()),
                *std::min_element(at_step.begin(), at_step.end()))
          << "cp " << cp << " step " << step;
    }
    for (int a = 0; a < chunks; ++a)
      for (int k = 0; k < chunks; ++k)
        EXPECT_EQ(seen[static_cast<size_t>(a * chunks + k)], k <= a ? 1 : 0) << a << " " << k;
    const double mean = std::accumulate(work.begin(), work.end(), 0.0) / cp;
    EXPECT_LE(*std::max_element(work.begin(), work.end()) / mean, 1.05) << "cp " << cp;
    // A contiguous split: rank r holds chunks 2r and 2r+1 and computes every block of them.
    std::vector<double> contiguous(static_cast<size_t>(cp), 0.0);
    for (int r = 0; r < cp; ++r)
      for (int a : {2 * r, 2 * r + 1})
        for (int k = 0; k <= a; ++k)
          contiguous[static_cast<size_t>(r)] += static_cast<double>(tiles(a == k));
    const double cmean = std::accumulate(contiguous.begin(), contiguous.end(), 0.0) / cp;
    if (cp == 4) {
      std::printf("ring blocks at cp 4: tiles per rank max/mean %.3f; contiguous split %.3f\n",
                  *std::max_element(work.begin(), work.end()) / mean,
                  *std::max_element(contiguous.begin(), contiguous.end()) / cmean);
      EXPECT_GT(*std::max_element(contiguous.begin(), contiguous.end()) / cmean, 1.7);
    }
  }
}

TEST(ContextSplit, RunsCoverRowsInOrderAtTheirPlaces) {
  const int cp = 4, seq = 32, B = 3;
  for (int r = 0; r < cp; ++r) {
    const ContextSplit s = split(cp, r, seq);
    const int64_t rows = int64_t{B} * s.local();
    for (int64_t first : {int64_t{0}, int64_t{3}, int64_t{8}})
      for (int64_t n : {rows - first, int64_t{5}}) {
        int64_t next = 0;
        for_each_run(s, first, n, [&](int64_t at, int64_t len, int64_t whole) {
          EXPECT_EQ(at, next);
          const int64_t row = first + at, sample = row / s.local();
          EXPECT_EQ(whole, sample * seq + s.position(static_cast<int>(row % s.local())));
          EXPECT_LE(len, s.chunk());
          next += len;
        });
        EXPECT_EQ(next, n);
      }
  }
}

TEST(ContextSplit, KeepsEachRanksTokens) {
  const int cp = 2, seq = 8, B = 2;
  std::vector<int32_t> whole(static_cast<size_t>(B * seq));
  std::iota(whole.begin(), whole.end(), 0);
  std::vector<int32_t> local(static_cast<size_t>(B * seq / cp));
  keep_local_tokens(split(cp, 1, seq), whole.data(), local.data(), B);
  EXPECT_EQ(local, (std::vector<int32_t>{2, 3, 4, 5, 10, 11, 12, 13}));
  keep_local_tokens(split(cp, 0, seq), whole.data(), local.data(), B);
  EXPECT_EQ(local, (std::vector<int32_t>{0, 1, 6, 7, 8, 9, 14, 15}));
}

}  // namespace
}  // namespace zt
