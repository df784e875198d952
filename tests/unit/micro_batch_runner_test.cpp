// The one-stage runner against the plain gradient-accumulation loop it stands for: the same
// loads, begin_microbatch(last) calls, losses and gradients, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "src/data/mock_data.h"
#include "src/pipeline/micro_batch_runner.h"
#include "tests/support/model_rig.h"
#include "tests/support/tiny_gpt.h"

namespace zt {
namespace {

constexpr int kBatch = 2, kMicro = 3;
constexpr uint64_t kSeed = 7;

struct Stage : test::ModelRig {
  Stage()
      : ModelRig(test::tiny_gpt(0.1f), kBatch, DType::F32, 42),  // dropout on: seeds matter
        batch(static_cast<size_t>(2 * kBatch * config.seq_length)),
        data(3, config.seq_length, config.vocab_size) {}
  // Micro-batch m's samples into dst (tokens then targets).
  void load(int m, int32_t* dst) const {
    const int T = config.seq_length;
    for (int b = 0; b < kBatch; ++b)
      data.sample(int64_t{m} * kBatch + b, dst + b * T, dst + (kBatch + b) * T);
  }
  std::vector<float> grads() {
    const float* g = opt.working_grads().f32();
    return {g, g + layout.numel()};
  }
  std::vector<int32_t> batch;
  MockData data;
};

float dloss(const GptConfig& c) {
  return 1.0f / static_cast<float>(kMicro * kBatch * c.seq_length);
}

TEST(WholeModelRunner, TrainsAsThePlainAccumulationLoopBitForBit) {
  Stage plain;
  int32_t* tokens = plain.batch.data();
  const int32_t* targets = tokens + kBatch * plain.config.seq_length;
  plain.opt.zero_grad();
  double expected = 0;
  for (int m = 0; m < kMicro; ++m) {
    plain.load(m, tokens);
    plain.opt.begin_microbatch(m == kMicro - 1);
    expected += plain.model.forward_backward(tokens, targets, dloss(plain.config), plain.opt,
                                             plain.acts, DropoutSeeds{kSeed, int64_t{m} * kBatch});
  }

  Stage s;
  const auto runner = pipeline::make_runner(s.model, s.acts, nullptr, {1, kMicro, 1}, s.pool,
                                            kBatch, s.batch.data());
  std::vector<int> loads;
  std::vector<bool> begins;
  s.opt.zero_grad();
  const auto r = runner->train(
      s.opt,
      [&](int m, int32_t* dst) {
        loads.push_back(m);
        s.load(m, dst);
      },
      dloss(s.config),
      [](int m) {
        return DropoutSeeds{kSeed, int64_t{m} * kBatch};
      },
      [&](bool last) {
        begins.push_back(last);
        s.opt.begin_microbatch(last);
      });
  EXPECT_EQ(loads, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(begins, (std::vector<bool>{false, false, true}));  // one run per micro-batch
  EXPECT_EQ(r.loss, expected);
  EXPECT_EQ(s.grads(), plain.grads());
}

TEST(WholeModelRunner, EvaluatesAsThePlainLoopAddingToTheRunningSum) {
  Stage plain;
  int32_t* tokens = plain.batch.data();
  const int32_t* targets = tokens + kBatch * plain.config.seq_length;
  double expected = 0.1;  // a sum carried over from earlier evaluation batches
  for (int m = 0; m < kMicro; ++m) {
    plain.load(m, tokens);
    expected += plain.model.forward_loss(tokens, targets, plain.opt, plain.acts);
  }

  Stage s;
  const auto runner = pipeline::make_runner(s.model, s.acts, nullptr, {1, kMicro, 1}, s.pool,
                                            kBatch, s.batch.data());
  int begins = 0;
  double sum = 0.1;
  runner->evaluate(
      s.opt, [&](int m, int32_t* dst) { s.load(m, dst); }, [&](bool) { ++begins; }, sum);
  EXPECT_EQ(begins, kMicro);
  EXPECT_EQ(sum, expected);
}

}  // namespace
}  // namespace zt
