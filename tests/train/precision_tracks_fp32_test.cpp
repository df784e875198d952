// bf16 and fp16 training track fp32 training on real text: a small GPT trained for 200 steps on
// the King James Bible (launch/prepare_kjv.sh, the quickstart's corpus and 4096-token BPE) with
// the same seed, data order and schedule in fp32, bf16 and fp16, one process. Every 10-step mean
// of the training loss of the half run stays within a band of the fp32 run's.
//
// Measured (2026-12-03, this machine; deterministic for this configuration): the largest |half -
// fp32| of a 10-step mean was bf16 0.096 (steps 31-40, just after the warm-up reaches lr 3e-3;
// bf16 then stays 0.05-0.06 above fp32 and ends 0.047 above, 5.434 vs 5.387) and fp16 0.046 (one
// skipped step; ends 0.001 away). fp32 falls from 8.16 to 5.39. Bands: twice the measurement,
// bf16 0.2 and fp16 0.1. The same test with seq 64 measured bf16 0.030 and fp16 0.198 (three
// skipped steps early, each one update behind): the gap moves with the run's chaos, so the band is
// not tighter than 2x. Run time: 66 s on the 2 shared cores under load (47 s of CPU).
//
// The corpus directory comes from ZT_KJV_DIR (CTest: the train.kjv_prepare fixture).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/comm/self_communicator.h"
#include "src/core/memory_pool.h"
#include "src/train/train_data.h"
#include "src/train/trainer.h"

namespace zt {
namespace {

constexpr int kSteps = 200;
constexpr int kWindow = 10;

std::string corpus_dir() {
  const char* d = std::getenv("ZT_KJV_DIR");
  return d ? d : "";
}

TrainOptions kjv(DType working) {
  const std::string dir = corpus_dir();
  TrainOptions o;
  o.data_path = dir + "/kjv_text_document";
  o.vocab_file = dir + "/tokenizer/vocab.json";
  o.merge_file = dir + "/tokenizer/merges.txt";
  o.split = "969,30,1";
  o.eval_iters = 0;  // training loss only
  o.num_layers = 2;
  o.hidden_size = 64;
  o.num_attention_heads = 4;
  o.seq_length = 32;
  o.micro_batch_size = 8;
  o.global_batch_size = 8;
  o.train_iters = kSteps;
  o.lr = 3e-3;
  o.min_lr = 3e-4;
  o.lr_warmup_iters = 20;
  o.lr_decay_style = "cosine";
  o.attention_dropout = 0;  // precision is the only difference between the runs
  o.hidden_dropout = 0;
  o.log_interval = 1000;
  o.bf16 = working == DType::BF16;
  o.fp16 = working == DType::F16;
  o.initial_loss_scale = 65536;  // fp16: Megatron's usual start; 2^32 would skip ~17 steps
  return o;
}

struct Curve {
  std::vector<double> window_mean;  // mean training loss of steps 10k+1 .. 10k+10
  int skipped = 0;
};

Curve train(DType working) {
  TrainOptions o = kjv(working);
  TrainData data = open_train_data(o);
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld alone;
  Trainer t(o, pool, alone.topology(), data);
  Curve c;
  double sum = 0;
  for (const StepMetrics& m : t.run(false)) {
    sum += m.lm_loss;
    c.skipped += m.skipped;
    if (m.iteration % kWindow == 0) {
      c.window_mean.push_back(sum / kWindow);
      sum = 0;
    }
  }
  return c;
}

TEST(PrecisionTracksFp32, KjvLossCurvesStayWithinTheBand) {
  ASSERT_FALSE(corpus_dir().empty()) << "set ZT_KJV_DIR to a launch/prepare_kjv.sh directory";
  const Curve fp32 = train(DType::F32), bf16 = train(DType::BF16), fp16 = train(DType::F16);
  ASSERT_EQ(fp32.window_mean.size(), static_cast<size_t>(kSteps / kWindow));
  // The run must learn, or tracking it proves little: the 4096-token uniform loss is 8.3.
  EXPECT_LT(fp32.window_mean.back(), fp32.window_mean.front() - 1.0);
  double worst_bf16 = 0, worst_fp16 = 0;
  std::printf("steps      fp32      bf16  |diff|      fp16  |diff|\n");
  for (size_t w = 0; w < fp32.window_mean.size(); ++w) {
    const double a = fp32.window_mean[w], b = bf16.window_mean[w], h = fp16.window_mean[w];
    worst_bf16 = std::max(worst_bf16, std::abs(b - a));
    worst_fp16 = std::max(worst_fp16, std::abs(h - a));
    std::printf("%3zu-%3zu %9.5f %9.5f %7.5f %9.5f %7.5f\n", w * kWindow + 1, (w + 1) * kWindow, a,
                b, std::abs(b - a), h, std::abs(h - a));
  }
  std::printf("largest |diff| of a 10-step mean: bf16 %.5f, fp16 %.5f; fp16 skipped %d steps\n",
              worst_bf16, worst_fp16, fp16.skipped);
  EXPECT_LE(worst_bf16, 0.2);
  EXPECT_LE(worst_fp16, 0.1);
  // Both half runs learn as far as fp32 does, not only stay near it early on.
  EXPECT_LT(bf16.window_mean.back(), fp32.window_mean.front() - 1.0);
  EXPECT_LT(fp16.window_mean.back(), fp32.window_mean.front() - 1.0);
}

}  // namespace
}  // namespace zt
