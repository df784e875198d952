// Hang attribution without MPI: several ranks' boards over one array of records (as the node's
// shared window holds them), each publishing what its rank does; attribute() names the members
// that never arrived at a stuck collective, and what they do (stopped, diverged, computing).
#include "src/comm/rank_board.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace zt::comm {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;
constexpr uint64_t kNow = 1000 * kSecond;
constexpr std::array<int, 4> kFour = {0, 1, 2, 3};

// `world` ranks; node_of gives each rank's node (the lowest world rank on it). Records exist for
// the ranks on rank 0's node only, as a real node's window would hold.
struct Node {
  explicit Node(int world, std::vector<int> node_of = {}) {
    if (node_of.empty()) node_of.assign(static_cast<size_t>(world), 0);
    std::vector<std::string> hosts;
    for (int r = 0; r < world; ++r) hosts.push_back(node_of[static_cast<size_t>(r)] ? "b" : "a");
    std::vector<RankRecord*> mine;
    for (int r = 0; r < world; ++r)
      if (node_of[static_cast<size_t>(r)] == 0) {
        records.push_back(std::make_unique<RankRecord>());
        mine.push_back(records.back().get());
      }
    for (int r = 0; r < world; ++r)
      boards.push_back(node_of[static_cast<size_t>(r)] == 0
                           ? std::make_unique<RankBoard>(mine, r, node_of, hosts)
                           : nullptr);
  }
  RankBoard& operator[](int r) { return *boards[static_cast<size_t>(r)]; }
  // Rank r issues n collectives of `op` on the communicator (g, members), beats its heartbeat
  // at `at`.
  void run(int r, std::string_view op, GroupKind g, int n, uint64_t at = kNow,
           std::span<const int> members = kFour) {
    for (int i = 0; i < n; ++i) (*this)[r].issue(op, g, group_key(g, members));
    (*this)[r].heartbeat(at);
  }
  void wait_in(int r, std::string_view op, GroupKind g, uint64_t seq,
               std::span<const int> members = kFour) {
    (*this)[r].set_waiting(Activity{RankBoard::op_code(op), g, seq}, group_key(g, members));
  }
  std::vector<std::unique_ptr<RankRecord>> records;
  std::vector<std::unique_ptr<RankBoard>> boards;
};

Stuck dp_all_reduce(uint64_t seq, std::span<const int> members = kFour) {
  return Stuck{"all_reduce", GroupKind::Dp, seq, members, -1, 20.0};
}

TEST(RankBoard, StoppedRankNeverArrivedWithItsLastState) {
  Node n(4);
  for (int r : {0, 2, 3}) {
    n.run(r, "all_reduce", GroupKind::Dp, 12);
    n.wait_in(r, "all_reduce", GroupKind::Dp, 12);
  }
  n.run(1, "all_reduce", GroupKind::Dp, 11, kNow - 19 * kSecond);  // then SIGSTOP
  const std::string line = n[2].attribute(dp_all_reduce(12), kNow, 3.0).line;
  EXPECT_EQ(line,
            "collective all_reduce on group dp timed out on rank 2 after 20.0 s (#12 on the "
            "group): rank 1 (host a) never arrived: not responding for 19.0 s (stopped or dead), "
            "last seen computing after all_reduce #11 on group dp; ranks 0, 2, 3 arrived");
}

TEST(RankBoard, StoppedRankThatIssuedAnAsyncCollectiveStillNeverArrived) {
  // It issued #12 (an async all-reduce) and stopped before anyone could complete it.
  Node n(4);
  for (int r : {0, 2, 3}) n.run(r, "all_reduce", GroupKind::Dp, 12);
  n.run(1, "all_reduce", GroupKind::Dp, 12, kNow - 10 * kSecond);
  const std::string line = n[0].attribute(dp_all_reduce(12), kNow, 3.0).line;
  EXPECT_NE(line.find("rank 1 (host a) never arrived: not responding for 10.0 s (stopped or "
                      "dead), last seen computing after all_reduce #12 on group dp"),
            std::string::npos)
      << line;
}

TEST(RankBoard, RankInAnotherCollectiveIsDiverged) {
  Node n(4);
  for (int r = 0; r < 4; ++r) n.run(r, "input agreement", GroupKind::World, 2);
  for (int r : {0, 1, 2}) {
    n.run(r, "all_reduce", GroupKind::Dp, 7);
    n.wait_in(r, "all_reduce", GroupKind::Dp, 7);
  }
  n.run(3, "all_reduce", GroupKind::Dp, 6);
  n.run(3, "barrier", GroupKind::World, 1);
  n.wait_in(3, "barrier", GroupKind::World, 3);
  const std::string line = n[0].attribute(dp_all_reduce(7), kNow, 3.0).line;
  EXPECT_NE(line.find("rank 3 (host a) never arrived: it is in barrier #3 on group world (#6 "
                      "its last on group dp): diverged; ranks 0, 1, 2 arrived"),
            std::string::npos)
      << line;
  // The diverged rank's own wait names the others, each in its all_reduce.
  const std::string other =
      n[3].attribute(Stuck{"barrier", GroupKind::World, 3, kFour, -1, 20.0}, kNow, 3.0).line;
  for (int r : {0, 1, 2})
    EXPECT_NE(other.find("rank " + std::to_string(r) +
                         " (host a) never arrived: it is in all_reduce #7 on group dp (#2 its "
                         "last on group world): diverged"),
              std::string::npos)
        << other;
}

TEST(RankBoard, AnotherOperationUnderTheSameNumberIsDiverged) {
  // Rank 1 skipped an all_reduce and waits in the barrier after it: both are #2 on the group.
  Node n(4);
  for (int r = 0; r < 4; ++r) n.run(r, "all_reduce", GroupKind::World, 1);
  for (int r : {0, 2, 3}) {
    n.run(r, "all_reduce", GroupKind::World, 1);
    n.wait_in(r, "all_reduce", GroupKind::World, 2);
  }
  n.run(1, "barrier", GroupKind::World, 1);
  n.wait_in(1, "barrier", GroupKind::World, 2);
  const RankBoard::Verdict v =
      n[0].attribute(Stuck{"all_reduce", GroupKind::World, 2, kFour, -1, 3.0}, kNow, 3.0);
  EXPECT_NE(v.line.find("rank 1 (host a) never arrived: it is in barrier #2 on group world: "
                        "diverged; ranks 0, 2, 3 arrived"),
            std::string::npos)
      << v.line;
  EXPECT_EQ(v.arrived, 3);
  EXPECT_EQ(v.missing, 1);
  // Seen from rank 1, it is alone: the majority's line is the one to print.
  const RankBoard::Verdict odd =
      n[1].attribute(Stuck{"barrier", GroupKind::World, 2, kFour, -1, 3.0}, kNow, 3.0);
  EXPECT_EQ(odd.arrived, 1);
  EXPECT_EQ(odd.missing, 3);
}

TEST(RankBoard, LiveRankOutsideAnyCollectiveIsComputing) {
  Node n(2);
  const std::array<int, 2> tp = {0, 1};
  n.run(0, "all_gather", GroupKind::Tp, 4, kNow, tp);
  n.run(1, "all_gather", GroupKind::Tp, 3, kNow - kSecond, tp);  // silent, but not yet stale
  const std::string line =
      n[0].attribute(Stuck{"all_gather", GroupKind::Tp, 4, tp, -1, 5.0}, kNow, 3.0).line;
  EXPECT_NE(line.find("rank 1 (host a) never arrived: computing, last all_gather #3 on group tp; "
                      "rank 0 arrived"),
            std::string::npos)
      << line;
}

TEST(RankBoard, MembersOnOtherNodesAreNamedUnseen) {
  Node n(4, {0, 0, 2, 2});
  n.run(0, "all_reduce", GroupKind::Dp, 1);
  n.run(1, "all_reduce", GroupKind::Dp, 1);
  const std::string line = n[0].attribute(dp_all_reduce(1), kNow, 3.0).line;
  EXPECT_NE(line.find("every member this host can see arrived; ranks 0, 1 arrived; ranks 2, 3 on "
                      "other hosts, not visible from host a"),
            std::string::npos)
      << line;
}

TEST(RankBoard, PointToPointNamesThePeer) {
  Node n(2);
  n.run(0, "recv", GroupKind::Pp, 5);
  n.run(1, "send", GroupKind::Pp, 2);
  n.wait_in(1, "all_reduce", GroupKind::Dp, 9);
  const std::string line =
      n[0].attribute(Stuck{"recv", GroupKind::Pp, 0, {}, 1, 3.0}, kNow, 3.0).line;
  EXPECT_EQ(line,
            "collective recv on group pp timed out on rank 0 after 3.0 s: rank 1 (host a) never "
            "arrived: it is in all_reduce #9 on group dp; rank 0 waiting");
  EXPECT_EQ(n[0].issue("send", GroupKind::Pp, 1), 0u)
      << "point-to-point operations are not counted";
}

TEST(RankBoard, CommunicatorsOfOneKindAreNumberedApart) {
  // A pipeline's pp group and its embedding group (first and last stage) are both of kind pp.
  Node n(4);
  const std::array<int, 2> ends = {0, 3};
  for (int r : {0, 3}) n.run(r, "all_reduce", GroupKind::Pp, 5, kNow, ends);
  for (int r = 0; r < 4; ++r) n.run(r, "barrier", GroupKind::Pp, 1);
  n.run(2, "barrier", GroupKind::Pp, 1);
  n.wait_in(2, "barrier", GroupKind::Pp, 2);
  const std::string line =
      n[2].attribute(Stuck{"barrier", GroupKind::Pp, 2, kFour, -1, 3.0}, kNow, 3.0).line;
  EXPECT_NE(line.find("rank 0 (host a) never arrived: computing, last barrier #1 on group pp"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("; rank 2 arrived"), std::string::npos) << line;
}

TEST(RankBoard, OneReportPerGroupAndNode) {
  Node n(4);
  const Stuck dp = dp_all_reduce(3);
  EXPECT_FALSE(n[3].claimed(dp));
  EXPECT_TRUE(n[2].claim(dp));
  EXPECT_TRUE(n[3].claimed(dp));
  EXPECT_FALSE(n[3].claim(dp));
  EXPECT_FALSE(n[0].claim(dp));
  EXPECT_FALSE(n[3].wait_printed(dp, 0.01));
  EXPECT_FALSE(n[1].any_printed());
  n[2].printed(dp);
  EXPECT_TRUE(n[3].wait_printed(dp, 0.01));
  EXPECT_TRUE(n[1].any_printed());
  // Another group's line is claimed apart.
  EXPECT_TRUE(n[1].claim(Stuck{"barrier", GroupKind::World, 1, kFour, -1, 1.0}));
}

TEST(RankBoard, ActivityRoundTrips) {
  const Activity a{RankBoard::op_code("reduce_scatter"), GroupKind::Mp, 123456789};
  const Activity b = Activity::unpack(a.pack());
  EXPECT_EQ(b.text(), "reduce_scatter #123456789 on group mp");
  EXPECT_EQ(Activity::unpack(0).text(), "nothing");
  EXPECT_EQ(RankBoard::op_code("no such op"), 0);
}

}  // namespace
}  // namespace zt::comm
