// The context-parallel split of a sample (src/model/context_split.h): rank r holds chunks r and
// 2·cp−1−r; over the group every position is held exactly once; runs cover a rank's rows in
// order with each run's place in the whole batch; the causal attention work is balanced.
#include "src/model/context_split.h"

#include <gtest/gtest.h>

#include <algorithm>
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
