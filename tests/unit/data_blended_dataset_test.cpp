// Blending by weight (Megatron's BlendedDataset order, exactly) and --data-path's forms.
#include <gtest/gtest.h>

#include <cmath>

#include "src/core/error.h"
#include "src/data/blended_dataset.h"
#include "src/data/indexed_dataset_builder.h"
#include "tests/support/data_testing.h"

namespace zt::data {
namespace {

TEST(ParseDataPath, MegatronForms) {
  const DataBlend one = parse_data_path("a/b_text_document");
  EXPECT_EQ(one.prefixes, std::vector<std::string>{"a/b_text_document"});
  EXPECT_EQ(one.weights, std::vector<double>{1.0});
  const DataBlend two = parse_data_path("0.7 a  3e-1 b");
  EXPECT_EQ(two.prefixes, (std::vector<std::string>{"a", "b"}));
  EXPECT_DOUBLE_EQ(two.weights[0], 0.7);
  EXPECT_DOUBLE_EQ(two.weights[1], 0.3);
  const DataBlend unnormalised = parse_data_path("2 a 6 b");
  EXPECT_DOUBLE_EQ(unnormalised.weights[0], 0.25);
}

TEST(ParseDataPath, RejectsMalformedBlends) {
  auto error = [](std::string_view s) {
    try {
      parse_data_path(s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("").find("empty"), std::string::npos);
  EXPECT_NE(error("0.5 a 0.5").find("pairs of weight and prefix"), std::string::npos);
  EXPECT_NE(error("a b").find("'a' is not a weight"), std::string::npos);
  EXPECT_NE(error("0.5 a 0 b").find("weight of 'b' must be positive"), std::string::npos);
  EXPECT_NE(error("0.5 a -1 b").find("must be positive"), std::string::npos);
}

class Blend : public ::testing::Test {
 protected:
  // Two datasets whose token ids tell them apart: A counts from 0, B from 10000.
  void SetUp() override {
    for (int k = 0; k < 2; ++k) {
      IndexedDatasetBuilder b(dir_ / std::to_string(k), DType::kInt32);
      for (int d = 0; d < 10; ++d) {
        std::vector<int32_t> doc(static_cast<size_t>(5 + k * 3 + d));
        for (auto& t : doc) t = 10000 * k + next_[k]++;
        b.add_document(doc);
      }
      b.finalize();
      ds_.push_back(
          std::make_unique<IndexedDataset>(IndexedDataset::open(dir_ / std::to_string(k))));
      gpt_.push_back(
          std::make_unique<GptDataset>(*ds_.back(), std::pair<size_t, size_t>{0, 10}, 4, 11 + k));
    }
  }
  testing::TempDir dir_;
  int32_t next_[2] = {0, 0};
  std::vector<std::unique_ptr<IndexedDataset>> ds_;
  std::vector<std::unique_ptr<GptDataset>> gpt_;
};

TEST_F(Blend, InterleavesExactlyAsMegatron) {
  const BlendedDataset b({gpt_[0].get(), gpt_[1].get()}, {0.7, 0.3});
  // build_blending_indices by hand: argmax_d w_d·max(i,1) − taken_d.
  const std::vector<size_t> want = {0, 1, 0, 0, 1, 0, 0, 1, 0, 0};
  std::vector<int64_t> taken(2, 0);
  for (int64_t i = 0; i < 10; ++i) {
    const auto [d, k] = b.locate(i);
    EXPECT_EQ(d, want[static_cast<size_t>(i)]) << "position " << i;
    EXPECT_EQ(k, taken[d]++) << "position " << i;
  }
}

TEST_F(Blend, SharesFollowTheWeightsAtEveryPrefix) {
  const BlendedDataset b({gpt_[0].get(), gpt_[1].get()}, {1.0, 3.0});  // normalised: 0.25, 0.75
  int64_t first = 0;
  for (int64_t n = 1; n <= 10000; ++n) {
    first += b.locate(n - 1).first == 0 ? 1 : 0;
    ASSERT_LE(std::abs(static_cast<double>(first) - 0.25 * static_cast<double>(n)), 1.0)
        << "after " << n;
  }
  // Far positions, asked for out of order, give the same answer as the sequential walk.
  const BlendedDataset again({gpt_[0].get(), gpt_[1].get()}, {1.0, 3.0});
  EXPECT_EQ(again.locate(9999), b.locate(9999));
  EXPECT_EQ(again.locate(17), b.locate(17));
}

TEST_F(Blend, ReadsThePartsOwnShuffledSamples) {
  const BlendedDataset b({gpt_[0].get(), gpt_[1].get()}, {0.5, 0.5});
  std::vector<int32_t> got(5), want(5);
  for (int64_t i = 0; i < 40; ++i) {  // past one epoch of each part
    const auto [d, k] = b.locate(i);
    b.read(i, got);
    gpt_[d]->read_sample(gpt_[d]->sample_at(k), want);
    ASSERT_EQ(got, want) << "position " << i;
    EXPECT_EQ(got[0] / 10000, static_cast<int32_t>(d));
  }
}

TEST_F(Blend, OneDatasetIsTheDatasetItself) {
  const BlendedDataset b({gpt_[1].get()}, {1.0});
  for (int64_t i = 0; i < 30; ++i) EXPECT_EQ(b.locate(i), (std::pair<size_t, int64_t>{0, i}));
}

}  // namespace
}  // namespace zt::data
