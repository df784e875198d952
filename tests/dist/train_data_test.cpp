// Training on a real (tiny) prepared dataset: the same losses, training and validation, on
// every data-parallel layout of the same global batch as on one rank, under ZeRO stages 0 and 3;
// validation is reported every --eval-interval steps and at the end, and the consumed-sample
// positions are exact.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/comm/self_communicator.h"
#include "src/comm/topology.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/support/train_data_testing.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

TrainOptions small(const std::string& prefix, int zero_stage) {
  TrainOptions o = test::small_gpt(0.1, 7);
  o.mock_data = false;  // the fixture dataset, its vocabulary from the tokenizer
  o.vocab_size = 0;
  o.make_vocab_size_divisible_by = 64;
  o.zero_stage = zero_stage;
  o.data_path = prefix;
  o.vocab_file = data::testing::fixture_vocab();
  o.merge_file = data::testing::fixture_merges();
  o.split = "80,20,0";
  o.eval_interval = 3;  // at 3, 6 and the end (7)
  o.eval_iters = 2;
  return o;
}

struct Outcome {
  std::vector<double> train, valid;
  std::vector<int> valid_at;
  int64_t consumed_train = 0, consumed_valid = 0;
};

Outcome run(TrainOptions o, bool distributed, const std::string& metrics = "") {
  o.metrics_file = metrics;
  TrainData data = open_train_data(o);
  MemoryPool local(make_host_allocator());
  comm::Topology topo(dist::world(), o.tensor_model_parallel_size, o.pipeline_model_parallel_size);
  comm::SelfWorld alone;
  Trainer t(o, distributed ? dist::pool() : local, distributed ? topo : alone.topology(),
            std::move(data));
  Outcome r;
  for (const auto& m : t.run(false)) r.train.push_back(m.lm_loss);
  for (const auto& [it, loss] : t.validation_history()) {
    r.valid_at.push_back(it);
    r.valid.push_back(loss);
  }
  r.consumed_train = t.consumed_train_samples();
  r.consumed_valid = t.consumed_valid_samples();
  return r;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * want[i]) << what << " " << i;
}

class TrainOnData : public ::testing::TestWithParam<int> {
 protected:
  // Each rank writes its own copy (the same bytes): no shared filesystem is assumed.
  void SetUp() override { prefix_ = data::testing::make_fixture_dataset(dir_ / ""); }
  data::testing::TempDir dir_;
  std::string prefix_;
};

TEST_P(TrainOnData, MatchesOneRankWithTheSameGlobalBatch) {
  // The reference is one process at stage 0 (stages 1-3 need a data-parallel group); in fp32
  // only the reduction order differs.
  const Outcome alone = run(small(prefix_, 0), false);
  const Outcome dp = run(small(prefix_, GetParam()), true, dir_ / "metrics.jsonl");
  expect_close(dp.train, alone.train, "training loss at step");
  expect_close(dp.valid, alone.valid, "validation loss at evaluation");
  EXPECT_EQ(dp.valid_at, (std::vector<int>{3, 6, 7}));
  EXPECT_EQ(dp.consumed_train, 7 * 8);
  EXPECT_EQ(dp.consumed_valid, 3 * 2 * 8);
  // Real text: the loss starts near ln(800) and falls, on both splits.
  EXPECT_LT(std::abs(dp.train.front() - std::log(800.0)), 0.5);
  EXPECT_LT(dp.train.back(), dp.train.front());
  EXPECT_LT(dp.valid.back(), dp.valid.front());
  // Rank 0 writes each evaluation to the metrics file.
  if (dist::world().rank() == 0) {
    std::ifstream in(dir_ / "metrics.jsonl");
    std::vector<int> at;
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line);
      if (j.contains("validation_loss")) {
        at.push_back(j["iteration"].get<int>());
        EXPECT_NEAR(j["validation_loss"].get<double>(), dp.valid[at.size() - 1], 1e-12);
      }
    }
    EXPECT_EQ(at, (std::vector<int>{3, 6, 7}));
  }
}

// The pipeline's evaluation (forward passes only, the loss on the last stage) and training
// on the same data: the one-rank losses, with the rest of the world as data parallelism.
TEST_P(TrainOnData, PipelineMatchesOneRank) {
  if (dist::world().size() % 2 != 0) GTEST_SKIP() << "needs 2 pipeline stages";
  const Outcome alone = run(small(prefix_, 0), false);
  TrainOptions o = small(prefix_, std::min(GetParam(), 1));  // ZeRO <= 1 with a pipeline
  o.pipeline_model_parallel_size = 2;
  const Outcome pp = run(o, true);
  expect_close(pp.train, alone.train, "training loss at step");
  expect_close(pp.valid, alone.valid, "validation loss at evaluation");
  EXPECT_EQ(pp.valid_at, (std::vector<int>{3, 6, 7}));
  EXPECT_EQ(pp.consumed_valid, 3 * 2 * 8);
}

INSTANTIATE_TEST_SUITE_P(ZeroStages, TrainOnData, ::testing::Values(0, 3),
                         [](const auto& info) { return "stage" + std::to_string(info.param); });

}  // namespace
}  // namespace zt
