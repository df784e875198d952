#include "src/zero/divergence_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "src/comm/rank_flags.h"

namespace zt {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(DivergenceCheck, NonFiniteLossOrGradientNorm) {
  DivergenceCheck c(true, false, 0);
  EXPECT_EQ(c.cause(2.0, 1.0), "");
  EXPECT_EQ(c.cause(-kNaN, 1.0), "the loss is NaN");
  EXPECT_EQ(c.cause(2.0, kInf), "the gradient norm is inf");
  EXPECT_EQ(c.cause(kNaN, kNaN), "the loss is NaN and the gradient norm NaN");
}

TEST(DivergenceCheck, Fp16GradientOverflowIsTheScalersAndTheCheckCanBeOff) {
  DivergenceCheck fp16(true, true, 0);
  EXPECT_EQ(fp16.cause(2.0, kInf), "");
  EXPECT_EQ(fp16.cause(kInf, kInf), "the loss is inf");
  DivergenceCheck unchecked(false, false, 0);
  EXPECT_EQ(unchecked.cause(kNaN, kNaN), "");
}

TEST(DivergenceCheck, LossSpikeAgainstTheRecentMean) {
  DivergenceCheck c(true, false, 2.0);
  // Too few losses yet for a mean: no spike however large.
  for (size_t i = 0; i + 1 < DivergenceCheck::kSpikeMinimum; ++i) EXPECT_EQ(c.cause(1.0, 1.0), "");
  EXPECT_EQ(c.cause(100.0, 1.0), "");  // the 20th loss: recorded, the mean is now 5.95
  EXPECT_EQ(c.cause(11.0, 1.0), "");   // below 2 x 5.95
  EXPECT_NE(c.cause(13.0, 1.0), "");   // above 2 x (119 + 11) / 21 = 12.38
  c.reset();
  EXPECT_EQ(c.cause(1000.0, 1.0), "");  // after a rewind the window starts again
}

TEST(RankFlags, RanksText) {
  EXPECT_EQ(comm::ranks_text({3}), "rank 3");
  EXPECT_EQ(comm::ranks_text({0, 1, 2, 3}), "ranks 0-3");
  EXPECT_EQ(comm::ranks_text({0, 2, 5}), "ranks 0, 2 and 5");
  std::vector<int> many;
  for (int r = 0; r < 40; r += 2) many.push_back(r);
  EXPECT_EQ(comm::ranks_text(many), "ranks 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22 and 8 more");
}

}  // namespace
}  // namespace zt
