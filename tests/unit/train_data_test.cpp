// Training data: --data-path and friends parse, the batch sources give the dataset's samples at
// global positions, and every bad file is an InputError naming it, found before allocation.
#include <gtest/gtest.h>

#include <fstream>

#include "src/config/derive.h"
#include "src/core/error.h"
#include "src/data/blended_dataset.h"
#include "src/data/indexed_dataset_builder.h"
#include "src/data/mock_data.h"
#include "src/train/train_data.h"
#include "tests/support/train_data_testing.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

using data::testing::fixture_merges;
using data::testing::fixture_vocab;

TEST(TrainDataOptions, DataPathTakesEveryWordUpToTheNextFlag) {
  const TrainOptions one =
      test::parse_options({"--data-path", "x_text_document", "--seq-length", "8"});
  EXPECT_EQ(one.data_path, "x_text_document");
  EXPECT_EQ(one.seq_length, 8);
  const TrainOptions blend =
      test::parse_options({"--data-path", "0.7", "a", "0.3", "b", "--eval-iters", "3"});
  EXPECT_EQ(blend.data_path, "0.7 a 0.3 b");
  EXPECT_EQ(blend.eval_iters, 3);
  const TrainOptions last =
      test::parse_options({"--eval-interval", "5", "--data-path", "0.5", "a", "0.5", "b"});
  EXPECT_EQ(last.data_path, "0.5 a 0.5 b");
  EXPECT_EQ(last.eval_interval, 5);
  EXPECT_EQ(test::parse_options({"--data-path=p"}).data_path, "p");
}

TEST(TrainDataOptions, MegatronDefaults) {
  const TrainOptions o = test::parse_options({});
  EXPECT_EQ(o.split, "969,30,1");
  EXPECT_EQ(o.tokenizer_type, "GPT2BPETokenizer");
  EXPECT_EQ(o.eval_interval, 1000);
  EXPECT_EQ(o.eval_iters, 100);
}

TEST(TrainDataOptions, JsonConfigTakesAListOrAString) {
  const std::string path = ::testing::TempDir() + "/zt_data_config.json";
  std::ofstream(path) << R"({"data_path": ["0.6", "a", "0.4", "b"], "split": "8,2,0",
                             "vocab_file": "v.json", "merge_file": "m.txt", "eval_iters": 2})";
  const TrainOptions o = test::parse_options({"--config", path});
  EXPECT_EQ(o.data_path, "0.6 a 0.4 b");
  EXPECT_EQ(o.split, "8,2,0");
  EXPECT_EQ(o.vocab_file, "v.json");
  EXPECT_EQ(o.eval_iters, 2);
  std::remove(path.c_str());
}

std::string error_of(std::vector<std::string_view> args) {
  try {
    TrainOptions o = test::parse_options(args);
    validate_train_options(o, 1);
    open_train_data(o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TrainDataOptions, ValidationNamesTheProblem) {
  EXPECT_NE(error_of({"--seq-length", "8"}).find("no data"), std::string::npos);
  EXPECT_NE(error_of({"--mock-data", "--vocab-size", "9", "--data-path", "p"}).find("exclusive"),
            std::string::npos);
  EXPECT_NE(error_of({"--data-path", "p"}).find("needs --vocab-file and --merge-file"),
            std::string::npos);
  EXPECT_NE(
      error_of({"--data-path", "p", "--vocab-file", "v", "--merge-file", "m", "--split", "9,x"})
          .find("--split '9,x'"),
      std::string::npos);
  EXPECT_NE(error_of({"--tokenizer-type", "SentencePiece"}).find("one of GPT2BPETokenizer"),
            std::string::npos);
  EXPECT_NE(error_of({"--data-path", "--seq-length", "8"}).find("--data-path needs a value"),
            std::string::npos);
}

class TrainDataFiles : public ::testing::Test {
 protected:
  void SetUp() override { prefix_ = data::testing::make_fixture_dataset(dir_ / ""); }
  TrainOptions options(std::string data_path) const {
    TrainOptions o;
    o.data_path = std::move(data_path);
    o.vocab_file = fixture_vocab();
    o.merge_file = fixture_merges();
    o.seq_length = 16;
    o.split = "80,20,0";
    o.eval_iters = 2;
    return o;
  }
  std::string error(TrainOptions o) const {
    try {
      open_train_data(o);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  data::testing::TempDir dir_;
  std::string prefix_;
};

TEST_F(TrainDataFiles, SourcesGiveTheSplitsShuffledSamples) {
  TrainOptions o = options(prefix_);
  const TrainData d = open_train_data(o);
  EXPECT_EQ(o.vocab_size, 800);  // from the tokenizer
  ASSERT_NE(d.train, nullptr);
  ASSERT_NE(d.valid, nullptr);
  const auto ds = data::IndexedDataset::open(prefix_);
  const auto ranges = data::split_documents(o.split, ds.num_documents());
  const data::GptDataset train(ds, ranges[0], 16, static_cast<uint64_t>(o.seed));
  std::vector<int32_t> tokens(16), targets(16), want(17);
  for (int64_t i = 0; i < 2 * train.num_samples(); i += 7) {
    d.train->sample(i, tokens.data(), targets.data());
    train.read_sample(train.sample_at(i), want);
    EXPECT_TRUE(std::equal(tokens.begin(), tokens.end(), want.begin())) << i;
    EXPECT_TRUE(std::equal(targets.begin(), targets.end(), want.begin() + 1)) << i;
  }
  // The validation stream holds the validation documents' tokens only.
  const data::GptDataset valid(ds, ranges[1], 16, 0);
  d.valid->sample(0, tokens.data(), targets.data());
  bool found = false;
  for (int64_t s = 0; s < valid.num_samples() && !found; ++s) {
    valid.read_sample(s, want);
    found = std::equal(tokens.begin(), tokens.end(), want.begin());
  }
  EXPECT_TRUE(found);
}

TEST_F(TrainDataFiles, BlendOfTwoDatasetsFollowsTheWeights) {
  const std::string other = data::testing::make_fixture_dataset(dir_ / "", "other");
  TrainOptions o = options("0.25 " + prefix_ + " 0.75 " + other);
  const TrainData d = open_train_data(o);
  std::vector<int32_t> tokens(16), targets(16);
  d.train->sample(1000, tokens.data(), targets.data());  // any position, far past an epoch
  EXPECT_EQ(o.vocab_size, 800);
  // Every dataset of the blend is checked, not just the first.
  TrainOptions bad = options("0.25 " + prefix_ + " 0.75 " + (dir_ / "gone"));
  EXPECT_NE(error(bad).find(dir_ / "gone.idx"), std::string::npos);
}

TEST_F(TrainDataFiles, NoEvaluationWithoutEvalIters) {
  TrainOptions o = options(prefix_);
  o.eval_iters = 0;
  o.split = "1,0,0";  // an empty validation split is fine then
  EXPECT_EQ(open_train_data(o).valid, nullptr);
}

TEST_F(TrainDataFiles, MockDataIsABatchSource) {
  TrainOptions o;
  o.mock_data = true;
  o.vocab_size = 50;
  o.seq_length = 8;
  const TrainData d = open_train_data(o);
  EXPECT_EQ(d.valid, nullptr);
  std::vector<int32_t> a(8), b(8), c(8), e(8);
  d.train->sample(5, a.data(), b.data());
  MockData(static_cast<uint64_t>(o.seed), 8, 50).sample(5, c.data(), e.data());
  EXPECT_EQ(a, c);
  EXPECT_EQ(b, e);
}

TEST_F(TrainDataFiles, BadFilesAreNamed) {
  EXPECT_NE(error(options(dir_ / "missing")).find(dir_ / "missing.idx"), std::string::npos);
  TrainOptions o = options(prefix_);
  o.vocab_file = dir_ / "nope.json";
  EXPECT_NE(error(o).find("--vocab-file '" + (dir_ / "nope.json") + "'"), std::string::npos);
  o = options(prefix_);
  o.merge_file = dir_ / "nope.txt";
  EXPECT_NE(error(o).find("--merge-file"), std::string::npos);
  // A vocab.json that is not JSON.
  std::ofstream(dir_ / "bad.json") << "{not json";
  o = options(prefix_);
  o.vocab_file = dir_ / "bad.json";
  EXPECT_NE(error(o).find(dir_ / "bad.json"), std::string::npos);
  // An explicit --vocab-size that disagrees with the tokenizer.
  o = options(prefix_);
  o.vocab_size = 900;
  EXPECT_NE(error(o).find("disagrees with --vocab-file"), std::string::npos);
  // Token ids the tokenizer cannot have made.
  {
    data::IndexedDatasetBuilder b(dir_ / "big", data::DType::kInt32);
    for (int d = 0; d < 10; ++d) b.add_document(std::vector<int32_t>(40, d == 7 ? 800 : 3));
    b.finalize();
  }
  const std::string big = error(options(dir_ / "big"));
  EXPECT_NE(big.find(dir_ / "big.bin"), std::string::npos) << big;
  EXPECT_NE(big.find("800"), std::string::npos) << big;
  // A truncated .bin.
  std::filesystem::resize_file(prefix_ + ".bin", 10);
  EXPECT_NE(error(options(prefix_)).find(prefix_ + ".bin"), std::string::npos);
}

TEST_F(TrainDataFiles, TooSmallValidationSplitSaysSo) {
  TrainOptions o = options(prefix_);
  o.split = "1,0,0";
  const std::string e = error(o);
  EXPECT_NE(e.find("validation split of --split 1,0,0"), std::string::npos) << e;
  EXPECT_NE(e.find("--eval-iters 0"), std::string::npos) << e;
}

}  // namespace
}  // namespace zt
