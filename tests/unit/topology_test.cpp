// The TP × PP × DP grid, checked for many world sizes without MPI.
#include "src/comm/topology.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace zt::comm {
namespace {

// Rank r's group of kind k: the ranks sharing its color are exactly its members, and their keys
// give the members in group order.
void expect_colors_and_keys(const ParallelGrid& g, GroupKind k, int r, int world) {
  const auto grp = g.group_ranks(k, r);
  for (int x = 0; x < world; ++x) {
    const bool member = std::find(grp.begin(), grp.end(), x) != grp.end();
    ASSERT_EQ(g.group_color(k, x) == g.group_color(k, r), member) << "rank " << x;
  }
  for (size_t i = 0; i < grp.size(); ++i) ASSERT_EQ(g.group_key(k, grp[i]), static_cast<int>(i));
}

TEST(ParallelGrid, EveryLayoutOfManyWorlds) {
  for (int world = 1; world <= 64; ++world)
    for (int tp = 1; tp <= world; ++tp)
      for (int pp = 1; pp <= world; ++pp) {
        if (world % (tp * pp)) continue;
        const ParallelGrid g(world, tp, pp);
        ASSERT_EQ(g.dp(), world / (tp * pp));
        std::set<int> seen;
        for (int r = 0; r < world; ++r) {
          const GridCoord c = g.coord_of(r);
          ASSERT_EQ(g.rank_of(c), r);
          ASSERT_EQ(r, c.tp + tp * (c.dp + g.dp() * c.pp));  // Megatron-core order
          ASSERT_TRUE(c.tp < tp && c.dp < g.dp() && c.pp < pp);
          seen.insert(r);
          const auto t = g.group_ranks(GroupKind::Tp, r);
          const auto d = g.group_ranks(GroupKind::Dp, r);
          const auto p = g.group_ranks(GroupKind::Pp, r);
          const auto m = g.group_ranks(GroupKind::Mp, r);
          ASSERT_EQ(t.size(), static_cast<size_t>(tp));
          ASSERT_EQ(d.size(), static_cast<size_t>(g.dp()));
          ASSERT_EQ(p.size(), static_cast<size_t>(pp));
          ASSERT_EQ(m.size(), static_cast<size_t>(tp * pp));
          // TP ranks are consecutive: one node holds a TP group.
          for (int i = 0; i < tp; ++i) ASSERT_EQ(t[static_cast<size_t>(i)], t[0] + i);
          // This rank sits at its coordinate in each group; members share the other coords.
          ASSERT_EQ(t[static_cast<size_t>(c.tp)], r);
          ASSERT_EQ(d[static_cast<size_t>(c.dp)], r);
          ASSERT_EQ(p[static_cast<size_t>(c.pp)], r);
          for (int x : d) ASSERT_EQ(g.coord_of(x).tp, c.tp);
          for (int x : m) ASSERT_EQ(g.coord_of(x).dp, c.dp);
          // Split arguments reproduce the groups: same color <=> same group, key = position.
          for (GroupKind k : {GroupKind::Tp, GroupKind::Dp, GroupKind::Pp, GroupKind::Mp}) {
            const auto grp = g.group_ranks(k, r);
            for (int x = 0; x < world; ++x) {
              const bool member = std::find(grp.begin(), grp.end(), x) != grp.end();
              ASSERT_EQ(g.group_color(k, x) == g.group_color(k, r), member)
                  << world << " " << tp << " " << pp;
            }
            for (size_t i = 0; i < grp.size(); ++i)
              ASSERT_EQ(g.group_key(k, grp[i]), static_cast<int>(i));
          }
        }
        ASSERT_EQ(seen.size(), static_cast<size_t>(world));
      }
}

TEST(ParallelGrid, ExampleEightRanks) {
  const ParallelGrid g(8, 2, 1);  // tp=2, dp=4
  EXPECT_EQ(g.group_ranks(GroupKind::Tp, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(g.group_ranks(GroupKind::Dp, 5), (std::vector<int>{1, 3, 5, 7}));
  const ParallelGrid h(16, 2, 2);  // tp=2, dp=4, pp=2
  EXPECT_EQ(h.group_ranks(GroupKind::Pp, 3), (std::vector<int>{3, 11}));
  EXPECT_EQ(h.group_ranks(GroupKind::Mp, 3), (std::vector<int>{2, 3, 10, 11}));
  EXPECT_EQ(h.coord_of(13), (GridCoord{1, 2, 1}));
}

// With context parallelism: tp fastest, then cp, then dp, then pp; the dp group is data x
// context (cp_rank + cp·dp_rank), the cp group consecutive tp-strided ranks.
TEST(ParallelGrid, ContextRanksSitBetweenTensorAndData) {
  for (int world = 1; world <= 48; ++world)
    for (int tp : {1, 2, 3})
      for (int cp : {1, 2, 4})
        for (int pp : {1, 2}) {
          if (world % (tp * cp * pp)) continue;
          const ParallelGrid g(world, tp, pp, cp);
          ASSERT_EQ(g.dp(), world / (tp * cp * pp));
          for (int r = 0; r < world; ++r) {
            const GridCoord c = g.coord_of(r);
            ASSERT_EQ(g.rank_of(c), r);
            ASSERT_EQ(r, c.tp + tp * (c.cp + cp * (c.dp + g.dp() * c.pp)));
            const auto cpg = g.group_ranks(GroupKind::Cp, r);
            const auto dpg = g.group_ranks(GroupKind::Dp, r);
            ASSERT_EQ(cpg.size(), static_cast<size_t>(cp));
            ASSERT_EQ(dpg.size(), static_cast<size_t>(cp * g.dp()));
            ASSERT_EQ(cpg[static_cast<size_t>(c.cp)], r);
            ASSERT_EQ(dpg[static_cast<size_t>(c.cp + cp * c.dp)], r);
            for (int i = 0; i < cp; ++i) ASSERT_EQ(cpg[static_cast<size_t>(i)], cpg[0] + i * tp);
            for (int x : dpg) {
              ASSERT_EQ(g.coord_of(x).tp, c.tp);
              ASSERT_EQ(g.coord_of(x).pp, c.pp);
            }
            for (GroupKind k :
                 {GroupKind::Tp, GroupKind::Cp, GroupKind::Dp, GroupKind::Pp, GroupKind::Mp})
              expect_colors_and_keys(g, k, r, world);
          }
        }
}

// Expert parallelism inside the data × context group: ep groups are ep consecutive members of
// it, edp groups its members at the same place in their ep group; each rank is in exactly one of
// each, their colors and keys give those members in that order, and an ep group and an edp group
// meet in one rank.
TEST(ParallelGrid, ExpertGroupsSplitTheDataGroup) {
  for (int world = 1; world <= 32; ++world)
    for (int tp : {1, 2})
      for (int cp : {1, 2})
        for (int pp : {1, 2})
          for (int ep : {1, 2, 4}) {
            if (world % (tp * cp * pp) || (world / (tp * pp)) % ep) continue;
            const ParallelGrid g(world, tp, pp, cp, ep);
            for (int r = 0; r < world; ++r) {
              const auto dpg = g.group_ranks(GroupKind::Dp, r);
              const auto epg = g.group_ranks(GroupKind::Ep, r);
              const auto edpg = g.group_ranks(GroupKind::Edp, r);
              ASSERT_EQ(epg.size(), static_cast<size_t>(ep));
              ASSERT_EQ(edpg.size() * epg.size(), dpg.size());
              const auto at =
                  static_cast<size_t>(std::find(dpg.begin(), dpg.end(), r) - dpg.begin());
              for (size_t i = 0; i < epg.size(); ++i) ASSERT_EQ(epg[i], dpg[at / ep * ep + i]);
              for (size_t j = 0; j < edpg.size(); ++j) ASSERT_EQ(edpg[j], dpg[j * ep + at % ep]);
              for (GroupKind k : {GroupKind::Ep, GroupKind::Edp})
                expect_colors_and_keys(g, k, r, world);
            }
          }
  EXPECT_THROW(ParallelGrid(8, 1, 1, 1, 3), InputError);
  EXPECT_THROW(ParallelGrid(8, 2, 2, 1, 4), InputError);
}

TEST(ParallelGrid, RejectsIndivisibleWorlds) {
  for (int world = 1; world <= 64; ++world)
    for (int tp = 1; tp <= 2 * world; ++tp) {
      if (world % tp == 0) {
        EXPECT_NO_THROW(validate_parallel_sizes(world, tp, 1));
        continue;
      }
      try {
        validate_parallel_sizes(world, tp, 1);
        ADD_FAILURE() << world << " " << tp;
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(fmt::format("world size {} is not divisible", world)),
                  std::string::npos)
            << e.what();
      }
    }
  EXPECT_THROW(validate_parallel_sizes(8, 0, 1), InputError);
  EXPECT_THROW(validate_parallel_sizes(8, 1, 0), InputError);
}

TEST(ParallelGrid, PipelineSizesAccepted) {
  EXPECT_NO_THROW(validate_parallel_sizes(8, 2, 2));
  EXPECT_NO_THROW(validate_parallel_sizes(8, 1, 8));
  EXPECT_THROW(validate_parallel_sizes(8, 2, 3), InputError);
}

}  // namespace
}  // namespace zt::comm
