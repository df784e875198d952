// The training loop end to end in one process: the loss falls on mock data, gradient
// accumulation does not change the math, fp16 loss scaling backs off on overflow, runs are
// reproducible.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "src/comm/self_communicator.h"
#include "src/core/error.h"
#include "src/data/batch_source.h"
#include "src/train/train_data.h"
#include "src/train/trainer.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

TrainOptions small() {
  TrainOptions o = test::small_gpt(0, 20);
  o.make_vocab_size_divisible_by = 64;
  o.micro_batch_size = 4;
  o.global_batch_size = 4;
  return o;
}

std::vector<double> losses(const TrainOptions& o) {
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld alone;
  Trainer t(o, pool, alone.topology());
  std::vector<double> out;
  for (const auto& m : t.run(false)) out.push_back(m.lm_loss);
  return out;
}

TEST(Trainer, LossFallsWellBelowLnVocab) {
  TrainOptions o = small();
  o.train_iters = 100;
  o.lr = 1e-2;
  o.lr_decay_style = "cosine";
  o.min_lr = 1e-3;
  const auto l = losses(o);
  std::printf("loss: first %.4f, last %.4f, ln(vocab) %.4f\n", l.front(), l.back(), std::log(50.0));
  EXPECT_NEAR(l.front(), std::log(50.0), 0.3);
  EXPECT_LT(l.back(), 0.5 * std::log(50.0));
}

TEST(Trainer, GradientAccumulationMatchesOneBigMicroBatch) {
  TrainOptions a = small(), b = small();
  b.micro_batch_size = 1;  // 4 accumulation steps of 1 sequence
  const auto la = losses(a), lb = losses(b);
  for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(la[i], lb[i], 1e-5 * la[i]) << "step " << i;
}

TEST(Trainer, SameSeedSameBits) {
  TrainOptions o = small();
  o.attention_dropout = 0.1;
  o.hidden_dropout = 0.1;
  o.train_iters = 5;
  EXPECT_EQ(losses(o), losses(o));
}

TEST(Trainer, Fp16OverflowSkipsAndLowersTheLossScale) {
  TrainOptions o = small();
  o.fp16 = true;
  o.hysteresis = 1;
  o.initial_loss_scale = 1e12;  // guarantees fp16 gradient overflow at first
  o.train_iters = 30;
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld alone;
  Trainer t(o, pool, alone.topology());
  const auto& h = t.run(false);
  EXPECT_TRUE(h.front().skipped);
  EXPECT_LT(h.back().loss_scale, 1e12);
  EXPECT_FALSE(h.back().skipped);
  EXPECT_LT(h.back().lm_loss, h.front().lm_loss);
}

TEST(Trainer, Bf16TracksFp32) {
  TrainOptions o = small();
  const auto l32 = losses(o);
  o.bf16 = true;
  const auto l16 = losses(o);
  // bf16 weights carry ~3 significant digits; over 20 steps the curves stay within a few %.
  for (size_t i = 0; i < l32.size(); ++i) EXPECT_NEAR(l16[i], l32[i], 0.03 * l32[i]);
}

TEST(Trainer, MemoryCategoriesAreReported) {
  TrainOptions o = small();
  o.bf16 = true;
  o.train_iters = 1;
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld alone;
  Trainer t(o, pool, alone.topology());
  const StepMetrics m = t.run(false).front();
  const size_t psi = static_cast<size_t>(t.optimizer().layout().numel());
  EXPECT_EQ(m.memory_peak[static_cast<size_t>(MemCategory::Params)], 2 * psi);
  EXPECT_EQ(m.memory_peak[static_cast<size_t>(MemCategory::Grads)], 2 * psi);
  EXPECT_EQ(m.memory_peak[static_cast<size_t>(MemCategory::Optimizer)], 12 * psi);
  EXPECT_GT(m.memory_peak[static_cast<size_t>(MemCategory::Activations)], 0u);
  EXPECT_GE(m.memory_total_peak, 16 * psi);
}

// Mock samples, but sample 6 holds the id `bad` at position 3 (as a token and, shifted, a target).
class BadIdSource final : public BatchSource {
 public:
  explicit BadIdSource(int32_t bad) : bad_(bad) {}
  void sample(int64_t index, int32_t* tokens, int32_t* targets) const override {
    for (int i = 0; i < 16; ++i) tokens[i] = targets[i] = static_cast<int32_t>((index + i) % 50);
    if (index == 6) tokens[3] = targets[2] = bad_;
  }

 private:
  int32_t bad_;
};

TEST(Trainer, RefusesABatchWithATokenIdOutsideTheVocabulary) {
  for (const int32_t bad : {50, -1}) {
    MemoryPool pool(make_host_allocator());
    TrainData data;
    data.train = std::make_shared<BadIdSource>(bad);
    comm::SelfWorld alone;
    Trainer t(small(), pool, alone.topology(), data);
    t.train_step();  // samples 0-3
    try {
      t.train_step();  // samples 4-7
      ADD_FAILURE() << "no error for id " << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                "sample 6 of the sample stream holds token id " + std::to_string(bad) +
                    " at position 3, outside the vocabulary [0, 50): the data does not match "
                    "--vocab-size or the tokenizer");
    }
  }
}

}  // namespace
}  // namespace zt
