// Loading a checkpoint with Megatron-LM's meanings: --finetune takes the weights alone (iteration
// 0, fresh optimizer, schedule and loss scale), --no-load-optim keeps the iteration but not the
// optimizer, --no-load-rng keeps --seed's dropout; dropout and a shorter sequence may change on a
// load, the parameters' shapes may not. And the learning-rate schedule advances only on updates
// that were applied (Megatron steps its scheduler only when the update succeeded).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "src/comm/self_communicator.h"
#include "src/core/error.h"
#include "src/train/trainer.h"
#include "src/zero/lr_schedule.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::path(::testing::TempDir()) /
             ("zt_finetune_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
};

// The model the tests fine-tune: trained 5 steps with dropout 0.1 and sequence 16, then saved.
TrainOptions pretrained_options() {
  TrainOptions o = test::small_gpt(0.1, 5);
  o.seed = 7;
  return o;
}

void pretrain(const std::string& dir) {
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld alone;
  Trainer t(pretrained_options(), pool, alone.topology());
  t.run(false);
  t.save_checkpoint(dir);
}

// The fine-tuning run: dropout off, half the sequence, a fresh warm-up.
TrainOptions finetune_options() {
  TrainOptions o = test::small_gpt(0.0, 3);
  o.seq_length = 8;
  o.lr_warmup_iters = 2;
  o.seed = 9;
  return o;
}

std::vector<float> host_copy(const Tensor& t) {
  return std::vector<float>(t.f32(), t.f32() + t.numel());
}

bool all_zero(const Tensor& t) {
  for (float v : host_copy(t))
    if (v != 0.f) return false;
  return true;
}

// The position table's first `rows` rows of a run's fp32 master weights.
std::vector<float> position_rows(Trainer& t, int rows) {
  const ParamSpec& p = t.optimizer().layout().find("embedding.position");
  const std::vector<float> all = host_copy(t.optimizer().master_params());
  const int64_t n = int64_t{rows} * p.full_shape[1];
  return std::vector<float>(all.begin() + p.offset, all.begin() + p.offset + n);
}

TEST(Finetune, TakesTheWeightsOnlyAndStartsAtTheLoadedModelsLoss) {
  TempDir dir("weights");
  pretrain(dir.str());
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld a1, a2, a3, a4;

  // The saved model's own first rows of positions, as the pretraining run holds them.
  Trainer saved(pretrained_options(), pool, a4.topology());
  ASSERT_EQ(saved.load_checkpoint(dir.str()), 5);

  TrainOptions f = finetune_options();
  f.finetune = true;
  Trainer tuned(f, pool, a1.topology());
  EXPECT_EQ(tuned.load_checkpoint(dir.str()), 0);
  EXPECT_EQ(tuned.loop_state().iteration, 0);
  EXPECT_EQ(tuned.consumed_train_samples(), 0);
  EXPECT_EQ(tuned.loop_state().lr_steps, 0);
  EXPECT_EQ(tuned.optimizer().adam_step(), 0);
  const std::vector<Tensor> states = tuned.optimizer().owned_state();
  EXPECT_TRUE(all_zero(states[1]) && all_zero(states[2])) << "Adam's moments must start fresh";
  EXPECT_EQ(position_rows(tuned, 8), position_rows(saved, 8));
  EXPECT_EQ(tuned.loop_state().seed, f.seed) << "--finetune keeps --seed's dropout";

  // The same weights loaded as a resume (which keeps the moments), put back at iteration 0: its
  // first step's loss is the loaded model's loss on the first batch, before any update.
  Trainer resumed(finetune_options(), pool, a2.topology());
  EXPECT_EQ(resumed.load_checkpoint(dir.str()), 5);
  EXPECT_FALSE(all_zero(resumed.optimizer().owned_state()[1]));
  Trainer::LoopState start = resumed.loop_state();
  start.iteration = 0;
  resumed.restore_loop_state(start);
  const StepMetrics r = resumed.train_step();

  const StepMetrics m = tuned.train_step();
  EXPECT_EQ(m.lm_loss, r.lm_loss);
  EXPECT_DOUBLE_EQ(m.lr, f.lr / 2) << "the fresh warm-up's first step";
  EXPECT_EQ(m.consumed_samples, f.global_batch_size);

  // Not the loss of an untrained model: the weights were taken.
  Trainer fresh(f, pool, a3.topology());
  EXPECT_NE(fresh.train_step().lm_loss, m.lm_loss);
}

TEST(Finetune, NoLoadOptimKeepsTheIterationWithAFreshOptimizer) {
  TempDir dir("optim");
  pretrain(dir.str());
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld alone;
  TrainOptions o = finetune_options();
  o.no_load_optim = true;
  o.train_iters = 8;
  Trainer t(o, pool, alone.topology());
  EXPECT_EQ(t.load_checkpoint(dir.str()), 5);
  EXPECT_EQ(t.consumed_train_samples(), 5 * o.global_batch_size);
  EXPECT_EQ(t.optimizer().adam_step(), 0);
  const std::vector<Tensor> states = t.optimizer().owned_state();
  EXPECT_TRUE(all_zero(states[1]) && all_zero(states[2]));
  const StepMetrics m = t.train_step();
  EXPECT_EQ(m.iteration, 6);
  EXPECT_DOUBLE_EQ(m.lr, o.lr / 2) << "the schedule restarts with the optimizer";
}

TEST(Finetune, DropoutContinuesTheCheckpointsSeedUnlessNoLoadRng) {
  TempDir dir("rng");
  pretrain(dir.str());
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld a1, a2;
  TrainOptions o = pretrained_options();
  o.seed = 11;
  o.train_iters = 6;
  Trainer resumed(o, pool, a1.topology());
  resumed.load_checkpoint(dir.str());
  EXPECT_EQ(resumed.loop_state().seed, 7);
  o.no_load_rng = true;
  Trainer own(o, pool, a2.topology());
  own.load_checkpoint(dir.str());
  EXPECT_EQ(own.loop_state().seed, 11);
  EXPECT_EQ(own.loop_state().iteration, 5);
}

std::string load_error(TrainOptions o, const std::string& dir) {
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld alone;
  Trainer t(o, pool, alone.topology());
  try {
    t.load_checkpoint(dir);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Finetune, OnlyAChangeOfTheParametersShapesIsRefused) {
  TempDir dir("shapes");
  pretrain(dir.str());
  TrainOptions wider = finetune_options();
  wider.hidden_size = 64;
  EXPECT_NE(load_error(wider, dir.str()).find("holds model of --hidden-size 32, this run 64"),
            std::string::npos);
  TrainOptions deeper = finetune_options();
  deeper.num_layers = 4;
  EXPECT_NE(load_error(deeper, dir.str()).find("--num-layers 2, this run 4"), std::string::npos);
  TrainOptions longer = finetune_options();
  longer.seq_length = 32;
  EXPECT_NE(load_error(longer, dir.str()).find("--seq-length 32 exceeds the 16 learned positions"),
            std::string::npos);
  // Dropout, a shorter sequence, another schedule and batch: allowed.
  TrainOptions other = finetune_options();
  other.lr = 1e-4;
  other.global_batch_size = 4;
  other.hidden_dropout = 0.2;
  EXPECT_EQ(load_error(other, dir.str()), "");
}

TEST(LrSchedule, AdvancesOnlyOnAppliedUpdates) {
  TempDir dir("skips");
  TrainOptions o = test::small_gpt(0, 12);
  o.fp16 = true;
  o.hysteresis = 1;
  o.initial_loss_scale = 0x1p32;  // the first steps overflow fp16 and are skipped
  o.lr_warmup_iters = 4;
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld a1, a2;
  Trainer t(o, pool, a1.topology());
  const std::vector<StepMetrics> h = t.run(false);
  const LrSchedule schedule{o.lr, o.min_lr, o.lr_warmup_iters, o.train_iters, o.lr_decay_style};
  int applied = 0;
  for (const StepMetrics& m : h) {
    // The lr of a step is the schedule's at the updates applied so far, plus this one.
    const double want = schedule.at(applied + 1);
    EXPECT_NEAR(m.lr, want, 1e-12 * o.lr) << "step " << m.iteration;
    applied += m.skipped ? 0 : 1;
  }
  ASSERT_GT(h.size() - static_cast<size_t>(applied), 0u) << "no step was skipped";
  EXPECT_EQ(t.loop_state().lr_steps, applied);
  // A resume continues from the updates applied, not from the iteration.
  t.save_checkpoint(dir.str());
  o.train_iters = 13;
  Trainer resumed(o, pool, a2.topology());
  resumed.load_checkpoint(dir.str());
  EXPECT_EQ(resumed.loop_state().lr_steps, applied);
}

}  // namespace
}  // namespace zt
