// RunClock's moving-average ETA and the progress texts.
#include <gtest/gtest.h>

#include "src/core/progress.h"

namespace zt {
namespace {

TEST(RunClock, EtaIsTheRecentMeanStepTimesStepsLeft) {
  RunClock c;
  EXPECT_EQ(c.eta(10), 0.0);  // no step yet
  c.step(1000);
  c.step(3000);
  EXPECT_DOUBLE_EQ(c.eta(10), 20.0);  // mean 2 s
  EXPECT_EQ(c.eta(0), 0.0);
  // A slow first step leaves the window after kWindow faster ones.
  for (size_t i = 0; i < RunClock::kWindow; ++i) c.step(100);
  EXPECT_DOUBLE_EQ(c.eta(5), 0.5);
  EXPECT_GE(c.step(100), 0.0);
}

TEST(RunClock, ClockTime) {
  EXPECT_EQ(clock_time(0), "0:00:00");
  EXPECT_EQ(clock_time(3725.9), "1:02:05");
  EXPECT_EQ(clock_time(-3), "0:00:00");
  EXPECT_EQ(clock_time(100 * 3600), "100:00:00");
}

TEST(Progress, StatusCountsBytes) {
  Progress p("saving", 4'000'000, /*enabled=*/false);
  p.add(1'000'000);
  EXPECT_EQ(p.done(), 1'000'000u);
  EXPECT_EQ(p.status().rfind("1.0 of 4.0 MB (25%), ", 0), 0u) << p.status();
}

}  // namespace
}  // namespace zt
