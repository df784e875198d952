#pragma once
// Where the ranks of each group run: the layout printed at start and the check that a
// tensor-parallel group stays inside one node. No MPI: the nodes and host names come from
// MpiRuntime, gathered once at start-up.
#include <string>
#include <vector>

#include "src/comm/topology.h"

namespace zt::comm {

// Placement on nodes. `node_of[r]` names rank r's node (any id shared by the ranks of one node,
// e.g. MpiRuntime::node_of()), `hosts[r]` its host name.
// The layout, printed once at start: one line per group kind, each group as its world ranks
// with their host, e.g.  "tp: [0 1]@n1 [2 3]@n2".  A group over several hosts lists each rank's.
std::string layout_text(const ParallelGrid& grid, const std::vector<std::string>& hosts);
// The world ranks of the first tensor-parallel group whose members sit on more than one node;
// empty when every tp group is inside a node.
std::vector<int> tp_group_spanning_nodes(const ParallelGrid& grid, const std::vector<int>& node_of);
// The one line about such a group: what it spans and how to map ranks so it does not.
std::string tp_spanning_message(const ParallelGrid& grid, const std::vector<int>& ranks,
                                const std::vector<std::string>& hosts);

}  // namespace zt::comm
