// GPT samples and the DP-sharded loader: samples span documents exactly, the shuffled order is
// deterministic in the seed, DP shards cover each sample exactly once per epoch, and a loader
// resumed at a consumed-samples position continues the uninterrupted sequence of batches.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "src/core/error.h"
#include "src/data/gpt_dataset.h"
#include "src/data/indexed_dataset_builder.h"
#include "tests/support/data_testing.h"

namespace zt::data {
namespace {

// 20 documents of varying length; token t of the stream has id t % 50000, so any window of
// the stream is recognisable.
class GptData : public ::testing::Test {
 protected:
  void SetUp() override {
    IndexedDatasetBuilder b(dir_ / "d", DType::kInt32);
    int32_t next = 0;
    for (int d = 0; d < 20; ++d) {
      std::vector<int32_t> doc(static_cast<size_t>(3 + (d * 7) % 11));
      for (auto& t : doc) t = next++;
      b.add_document(doc);
    }
    b.finalize();
    total_ = next;
    ds_ = std::make_unique<IndexedDataset>(IndexedDataset::open(dir_ / "d"));
  }
  testing::TempDir dir_;
  std::unique_ptr<IndexedDataset> ds_;
  int32_t total_ = 0;
};

TEST(SplitDocuments, MegatronBoundaries) {
  using R = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(split_documents("949,50,1", 1000), (R{{0, 949}, {949, 999}, {999, 1000}}));
  EXPECT_EQ(split_documents("1", 10), (R{{0, 10}, {10, 10}, {10, 10}}));
  // 5.6, 0.7, 0.7 round to 6, 1, 1: 1 too many, so Megatron shifts every boundary down by 1.
  EXPECT_EQ(split_documents("8,1,1", 7), (R{{0, 5}, {5, 6}, {6, 7}}));
  EXPECT_THROW(split_documents("9,x", 10), InputError);
  EXPECT_THROW(split_documents("0,0", 10), InputError);
}

TEST_F(GptData, SamplesSpanDocumentsWithOneTokenOverlap) {
  const GptDataset g(*ds_, {0, 20}, 8, 1);
  EXPECT_EQ(g.num_samples(), (total_ - 1) / 8);
  std::vector<int32_t> s(9);
  for (int64_t i = 0; i < g.num_samples(); ++i) {
    g.read_sample(i, s);
    std::vector<int32_t> want(9);
    std::iota(want.begin(), want.end(), static_cast<int32_t>(i * 8));
    ASSERT_EQ(s, want) << "sample " << i;
  }
}

TEST_F(GptData, ShuffleIsDeterministicInTheSeed) {
  const GptDataset a(*ds_, {0, 20}, 4, 42), b(*ds_, {0, 20}, 4, 42), c(*ds_, {0, 20}, 4, 43);
  std::vector<int64_t> oa, ob, oc;
  for (int64_t p = 0; p < 2 * a.num_samples(); ++p) {
    oa.push_back(a.sample_at(p));
    ob.push_back(b.sample_at(p));
    oc.push_back(c.sample_at(p));
  }
  EXPECT_EQ(oa, ob);
  EXPECT_NE(oa, oc);
  // Epochs are different permutations of the same samples.
  const auto n = a.num_samples();
  EXPECT_FALSE(std::equal(oa.begin(), oa.begin() + n, oa.begin() + n));
  EXPECT_TRUE(std::is_permutation(oa.begin(), oa.begin() + n, oa.begin() + n));
}

TEST_F(GptData, DpShardsCoverEachSampleOncePerEpoch) {
  const int64_t L = 2;
  const GptDataset g(*ds_, {0, 20}, L, 7);
  const int dp = 4;
  const int64_t global = 8;
  const int64_t steps = g.num_samples() / global;
  std::vector<GptLoader> loaders;
  for (int r = 0; r < dp; ++r) loaders.emplace_back(g, global, r, dp);
  std::multiset<int32_t> first_tokens;
  std::vector<int32_t> tok(2 * L), tgt(2 * L);
  for (int64_t s = 0; s < steps; ++s)
    for (auto& l : loaders) {
      l.next_batch(tok, tgt);
      for (int64_t b = 0; b < l.local_batch(); ++b) {
        first_tokens.insert(tok[b * L]);
        EXPECT_EQ(tgt[b * L], tok[b * L] + 1);  // targets are the next tokens
      }
    }
  // Sample i starts at token i*L; each sample seen at most once, steps*global of them.
  EXPECT_EQ(first_tokens.size(), static_cast<size_t>(steps * global));
  EXPECT_EQ(std::set<int32_t>(first_tokens.begin(), first_tokens.end()).size(),
            first_tokens.size());
  for (int32_t t : first_tokens) EXPECT_EQ(t % L, 0);
}

TEST_F(GptData, ResumeAtConsumedSamplesContinuesTheSameBatches) {
  const GptDataset g(*ds_, {0, 20}, 3, 5);
  GptLoader straight(g, 4, 1, 2);
  std::vector<int32_t> tok(6), tgt(6);
  std::vector<std::vector<int32_t>> seen;
  for (int s = 0; s < 40; ++s) {  // several epochs
    straight.next_batch(tok, tgt);
    seen.push_back(tok);
  }
  GptLoader first(g, 4, 1, 2);
  for (int s = 0; s < 13; ++s) first.next_batch(tok, tgt);
  GptLoader resumed(g, 4, 1, 2, first.consumed_samples());
  EXPECT_EQ(resumed.consumed_samples(), 13 * 4);
  for (int s = 13; s < 40; ++s) {
    resumed.next_batch(tok, tgt);
    ASSERT_EQ(tok, seen[s]) << "step " << s;
  }
}

TEST_F(GptData, Errors) {
  EXPECT_THROW(GptDataset(*ds_, {0, 1}, 1000, 1), InputError);  // split shorter than a sample
  const GptDataset g(*ds_, {0, 20}, 4, 1);
  EXPECT_THROW(GptLoader(g, 6, 0, 4), InputError);  // global batch not a multiple of dp
}

}  // namespace
}  // namespace zt::data
