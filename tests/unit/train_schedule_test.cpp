#include <gtest/gtest.h>

#include "src/zero/loss_scaler.h"
#include "src/zero/lr_schedule.h"

namespace zt {
namespace {

TEST(LrSchedule, WarmupThenCosineToMin) {
  LrSchedule s{1.0, 0.1, 10, 110, "cosine"};
  EXPECT_DOUBLE_EQ(s.at(1), 0.1);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
  EXPECT_NEAR(s.at(60), 0.55, 1e-12);  // half-way: min + (max - min) / 2
  EXPECT_NEAR(s.at(110), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(s.at(200), 0.1);
}

TEST(LrSchedule, LinearAndConstant) {
  LrSchedule lin{2.0, 0.0, 0, 100, "linear"};
  EXPECT_DOUBLE_EQ(lin.at(25), 1.5);
  LrSchedule c{2.0, 0.0, 4, 100, "constant"};
  EXPECT_DOUBLE_EQ(c.at(2), 1.0);
  EXPECT_DOUBLE_EQ(c.at(90), 2.0);
}

// DeepSpeed's WarmupLR / WarmupDecayLR with warmup_type log (deepspeed/runtime/lr_schedules.py,
// _get_gamma): lr = min_lr + (max_lr - min_lr) x ln(i + 1) / ln(max(2, warmup_num_steps)) for
// i < warmup_num_steps, then the decay; min_lr is 0 here. The expected values are the formula's,
// written out with ln(2) = 0.693147..., ln(10) = 2.302585...
TEST(LrSchedule, LogWarmupIsDeepSpeeds) {
  const LrSchedule s{0.001, 0.0, 10, 100, "linear", "log"};
  EXPECT_NEAR(s.at(1), 0.001 * 0.6931471805599453 / 2.302585092994046, 1e-15);  // ln 2 / ln 10
  EXPECT_NEAR(s.at(4), 0.001 * 1.6094379124341003 / 2.302585092994046, 1e-15);  // ln 5 / ln 10
  EXPECT_NEAR(s.at(9), 0.001, 1e-15);                                           // ln 10 / ln 10
  EXPECT_DOUBLE_EQ(s.at(10), 0.001);                              // warm-up over: the peak
  EXPECT_NEAR(s.at(55), 0.001 * (100 - 55) / (100 - 10), 1e-15);  // WarmupDecayLR's linear decay
  const LrSchedule two{1.0, 0.0, 2, 2, "constant", "log"};        // ln(2) / ln(2) at the first step
  EXPECT_DOUBLE_EQ(two.at(1), 1.0);
  const LrSchedule linear{1.0, 0.0, 10, 100, "linear"};  // the default shape: lr x step / warm-up
  EXPECT_DOUBLE_EQ(linear.at(4), 0.4);
}

TEST(LossScaler, HysteresisBackoffAndGrowth) {
  LossScaler s(LossScalerConfig{true, 1024.0, 3, 2, 256.0});
  s.update(true);  // first overflow: hysteresis absorbs it
  EXPECT_EQ(s.scale(), 1024.0);
  s.update(true);  // second: halve
  EXPECT_EQ(s.scale(), 512.0);
  s.update(true);
  s.update(true);
  s.update(true);
  EXPECT_EQ(s.scale(), 256.0);  // floored at min_scale
  for (int i = 0; i < 3; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 512.0);  // a clean window doubles
}

TEST(LossScaler, StaticScaleNeverMoves) {
  LossScaler s(LossScalerConfig{false, 128.0, 1, 1, 1.0});
  s.update(true);
  s.update(false);
  EXPECT_EQ(s.scale(), 128.0);
}

TEST(LossScaler, StopsWhenAnOverflowFindsTheScaleAtItsMinimum) {
  LossScaler s(LossScalerConfig{true, 512.0, 1000, 2, 256.0});
  s.update(true);
  s.update(true);  // 512 -> 256: the minimum reached, not yet stuck
  EXPECT_TRUE(s.stuck().empty());
  s.update(false);  // a clean step resets nothing about hysteresis (Megatron's rule)
  s.update(true);   // hysteresis spent and the scale at 256: DeepSpeed's "already at minimum"
  EXPECT_NE(s.stuck().find("already at its minimum (256"), std::string::npos) << s.stuck();
}

TEST(LossScaler, StopsAfterConsecutiveSkipsOnlyInARow) {
  LossScalerConfig c{false, 128.0, 1, 1, 1.0};
  c.max_consecutive_skips = 3;
  LossScaler s(c);
  s.update(true);
  s.update(true);
  s.update(false);  // the count starts again
  s.update(true);
  s.update(true);
  EXPECT_TRUE(s.stuck().empty());
  s.update(true);
  EXPECT_NE(s.stuck().find("3 consecutive steps skipped"), std::string::npos) << s.stuck();
}

TEST(LossScaler, GrowthStopsAtMaxScale) {
  LossScalerConfig c{true, 1024.0, 2, 2, 1.0};
  c.max_scale = 4096.0;
  LossScaler s(c);
  for (int i = 0; i < 20; ++i) s.update(false);  // ten clean windows: 2^20 without the cap
  EXPECT_EQ(s.scale(), 4096.0);
  LossScaler d(LossScalerConfig{true, 0x1p32, 1, 2, 1.0});  // the defaults' cap: 2^32
  for (int i = 0; i < 3000; ++i) d.update(false);           // 2^3032 would be inf in double
  EXPECT_EQ(d.scale(), 0x1p32);
}

TEST(LossScaler, ConsecutiveSkipsSurviveARestore) {
  LossScalerConfig c{false, 128.0, 1, 1, 1.0};
  c.max_consecutive_skips = 3;
  LossScaler before(c);
  before.update(true);
  before.update(true);
  const LossScaler::State saved = before.state();
  EXPECT_EQ(saved.consecutive_skips, 2);
  LossScaler resumed(c);
  resumed.restore(saved);
  resumed.update(true);  // the third in a row, counting the two before the checkpoint
  EXPECT_NE(resumed.stuck().find("3 consecutive steps skipped"), std::string::npos)
      << resumed.stuck();
}

TEST(LossScaler, RestoreKeepsADynamicScaleInsideThisRunsBounds) {
  LossScalerConfig c{true, 1024.0, 1000, 2, 16.0};
  c.max_scale = 2048.0;
  LossScaler s(c);
  s.restore({0x1p40, 0, 2, 0});
  EXPECT_EQ(s.scale(), 2048.0);
  s.restore({1.0, 0, 2, 0});
  EXPECT_EQ(s.scale(), 16.0);
}

}  // namespace
}  // namespace zt
