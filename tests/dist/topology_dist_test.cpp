// Topology on real MPI: the split groups are exactly the grid's groups, for every tp.
#include <gtest/gtest.h>

#include "tests/dist/dist_util.h"

namespace zt::dist {
namespace {

using comm::GroupKind;

TEST(Topology, GroupsMatchTheGrid) {
  const int W = world().size(), me = world().rank();
  for (int tp = 1; tp <= W; ++tp) {
    if (W % tp) continue;
    comm::Topology topo(world(), tp);
    const comm::ParallelGrid& grid = topo.grid();
    EXPECT_EQ(topo.dp_size(), W / tp);
    EXPECT_EQ(topo.pp_size(), 1);
    EXPECT_EQ(topo.groups(), comm::Topology::split_groups(1));
    EXPECT_EQ(topo.coord(), grid.coord_of(me));
    EXPECT_EQ(topo.tp_rank(), me % tp);
    for (GroupKind k : {GroupKind::Tp, GroupKind::Dp, GroupKind::Pp, GroupKind::Mp}) {
      const auto want = grid.group_ranks(k, me);
      const comm::Communicator& g = topo.group(k);
      EXPECT_EQ(g.kind(), k);
      ASSERT_EQ(static_cast<size_t>(g.size()), want.size()) << "tp " << tp << " " << g.name();
      for (int r = 0; r < g.size(); ++r)
        EXPECT_EQ(g.world_rank_of(r), want[static_cast<size_t>(r)]) << "tp " << tp;
      EXPECT_EQ(topo.first_rank(k), want.front());
      EXPECT_EQ(topo.last_rank(k), want.back());
      EXPECT_EQ(g.world_rank_of(g.rank()), me);
    }
    // TP ranks are adjacent (inside a node).
    EXPECT_EQ(topo.last_rank(GroupKind::Tp) - topo.first_rank(GroupKind::Tp), tp - 1);
  }
}

// Expert parallelism's groups: split from the world as the grid says, for every ep dividing the
// data group (tp 1 and, where the world allows, tp 2 and cp 2).
TEST(Topology, ExpertGroupsMatchTheGrid) {
  const int W = world().size(), me = world().rank();
  for (int tp : {1, 2})
    for (int cp : {1, 2})
      for (int ep = 2; ep <= W; ep *= 2) {
        if (W % (tp * cp) || (W / tp) % ep) continue;
        comm::Topology topo(world(), tp, 1, nullptr, cp, ep);
        EXPECT_EQ(topo.groups(), comm::Topology::split_groups(1, ep));
        for (GroupKind k : {GroupKind::Ep, GroupKind::Edp}) {
          const auto want = topo.grid().group_ranks(k, me);
          const comm::Communicator& g = topo.group(k);
          EXPECT_EQ(g.kind(), k);
          ASSERT_EQ(static_cast<size_t>(g.size()), want.size()) << g.name();
          for (int r = 0; r < g.size(); ++r)
            EXPECT_EQ(g.world_rank_of(r), want[static_cast<size_t>(r)]) << g.name();
        }
        EXPECT_EQ(topo.ep()->size(), ep);
        EXPECT_EQ(topo.edp()->size() * ep, topo.dp().size());
      }
}

TEST(Topology, RejectsBadSizesOnEveryRank) {
  const int W = world().size();
  EXPECT_THROW(comm::Topology(world(), 3), InputError);  // 2, 4, 8 % 3 != 0
  EXPECT_THROW(comm::Topology(world(), 2 * W), InputError);
  EXPECT_THROW(comm::Topology(world(), 1, 2 * W), InputError);
}

TEST(Topology, EmbeddingGroupIsTheFirstAndLastStage) {
  const int W = world().size();
  comm::Topology t(world(), 1, W);  // every rank a stage
  EXPECT_EQ(t.groups(), comm::Topology::split_groups(W));
  ASSERT_NE(t.embedding(), nullptr);
  const bool ends = t.pp_rank() == 0 || t.pp_rank() == W - 1;
  EXPECT_EQ(t.embedding()->size(), ends ? 2 : W - 2);
  if (ends) {
    EXPECT_EQ(t.embedding()->world_rank_of(0), t.grid().rank_of({0, 0, 0}));
    EXPECT_EQ(t.embedding()->world_rank_of(1), t.grid().rank_of({0, 0, W - 1}));
  }
  comm::Topology flat(world(), 1, 1);
  EXPECT_EQ(flat.embedding(), nullptr);
}

}  // namespace
}  // namespace zt::dist
