// Placement of the groups on nodes: which tensor-parallel group spans hosts, and the layout text.
#include "src/comm/placement.h"

#include <gtest/gtest.h>

namespace zt::comm {
namespace {

TEST(Placement, BlockMappingKeepsTensorParallelGroupsOnANode) {
  const ParallelGrid grid(8, 2, 1);  // tp 2, dp 4
  // --map-by slot, 4 slots per node: ranks 0-3 on node 0, 4-7 on node 4.
  const std::vector<int> node = {0, 0, 0, 0, 4, 4, 4, 4};
  EXPECT_TRUE(tp_group_spanning_nodes(grid, node).empty());
}

TEST(Placement, RoundRobinSpreadsEveryTensorParallelGroup) {
  const ParallelGrid grid(4, 2, 1);
  const std::vector<int> node = {0, 1, 0, 1};  // --map-by node
  EXPECT_EQ(tp_group_spanning_nodes(grid, node), (std::vector<int>{0, 1}));
  const std::vector<std::string> hosts = {"a", "b", "a", "b"};
  const std::string m = tp_spanning_message(grid, {0, 1}, hosts);
  EXPECT_NE(m.find("[0@a 1@b]"), std::string::npos) << m;
  EXPECT_NE(m.find("--map-by slot"), std::string::npos) << m;
  EXPECT_NE(m.find("--distribution=block"), std::string::npos) << m;
}

TEST(Placement, LayoutNamesEveryGroupAndItsHosts) {
  const ParallelGrid grid(4, 2, 1);
  const std::vector<std::string> hosts = {"n1", "n1", "n2", "n2"};
  EXPECT_EQ(layout_text(grid, hosts),
            "layout: tp=2 pp=1 dp=2 over 4 rank(s) on 2 host(s)\n"
            "  tp: [0 1]@n1 [2 3]@n2\n"
            "  dp: [0@n1 2@n2] [1@n1 3@n2]");
}

}  // namespace
}  // namespace zt::comm
