#include "src/data/sample_skips.h"

#include <gtest/gtest.h>

#include "src/core/error.h"

namespace zt::data {
namespace {

TEST(SampleSkips, EmptyIsIdentity) {
  const SampleSkips s;
  for (int64_t i : {0, 1, 17, 1 << 30}) EXPECT_EQ(s.physical(i), i);
}

TEST(SampleSkips, PhysicalPassesEverySkippedRange) {
  const SampleSkips s = SampleSkips::parse("4-8,10-11");
  // Stream 0 1 2 3 [4 5 6 7] 8 9 [10] 11 12 ...: logical 4 is stream 8, logical 6 is stream 11.
  const int64_t want[] = {0, 1, 2, 3, 8, 9, 11, 12, 13};
  for (int64_t l = 0; l < 9; ++l) EXPECT_EQ(s.physical(l), want[l]) << "logical " << l;
}

TEST(SampleSkips, PhysicalRangesSplitAtSkips) {
  const SampleSkips s = SampleSkips::parse("4-8");
  const std::vector<SampleRange> want = {{2, 4}, {8, 10}};
  EXPECT_EQ(s.physical_ranges(2, 6), want);
  EXPECT_EQ(s.physical_ranges(4, 6), (std::vector<SampleRange>{{8, 10}}));
}

TEST(SampleSkips, AddMergesTouchingAndOverlapping) {
  SampleSkips s;
  s.add({10, 20});
  s.add({0, 2});
  s.add({20, 25});  // touches
  s.add({15, 30});  // overlaps
  s.add({40, 41});
  EXPECT_EQ(s.text(), "0-2,10-30,40-41");
  s.add({2, 10});  // fills the gap
  EXPECT_EQ(s.text(), "0-30,40-41");
}

TEST(SampleSkips, ParseRoundTripsAndRefusesBadText) {
  EXPECT_EQ(SampleSkips::parse("5-9,1-3").text(), "1-3,5-9");
  for (const char* bad :
       {"5", "9-5", "3-3", "a-b", "-1-4", "1-2,", "1--2", "0-2000000000000000000"})
    EXPECT_THROW(SampleSkips::parse(bad), InputError) << bad;
}

TEST(SampleSkips, ConstructorChecksACheckpointsList) {
  EXPECT_NO_THROW(SampleSkips({{0, 4}, {6, 8}}, "meta.json"));
  EXPECT_THROW(SampleSkips({{6, 8}, {0, 4}}, "meta.json"), InputError);  // unsorted
  EXPECT_THROW(SampleSkips({{0, 4}, {4, 8}}, "meta.json"), InputError);  // touching: not merged
  EXPECT_THROW(SampleSkips({{3, 3}}, "meta.json"), InputError);          // empty
  EXPECT_THROW(SampleSkips({{-1, 3}}, "meta.json"), InputError);
}

}  // namespace
}  // namespace zt::data
