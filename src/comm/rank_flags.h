#pragma once
// Which ranks of a group saw something (a non-finite loss, a non-finite shard): one flag per rank,
// all-gathered in host memory, so every rank learns the same list. For rare events (a divergence,
// a refused save), not for every step.
#include <string>
#include <vector>

#include "src/comm/communicator.h"

namespace zt::comm {

// Collective over `group` (a host communicator): the group ranks whose `mine` was true, ascending.
std::vector<int> ranks_where(Communicator& group, bool mine);
// "rank 3", "ranks 0-3", "ranks 0, 2 and 5"; past a dozen, the first ones and how many more.
std::string ranks_text(const std::vector<int>& ranks);

}  // namespace zt::comm
