#include "src/comm/rank_flags.h"

#include <fmt/format.h>

namespace zt::comm {

std::vector<int> ranks_where(Communicator& group, bool mine) {
  const int n = group.size();
  std::vector<float> flags(static_cast<size_t>(n), 0.0f);
  flags[static_cast<size_t>(group.rank())] = mine ? 1.0f : 0.0f;
  if (n > 1) group.all_gather(Tensor(flags.data(), {n}, DType::F32));
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r)
    if (flags[static_cast<size_t>(r)] != 0.0f) ranks.push_back(r);
  return ranks;
}

std::string ranks_text(const std::vector<int>& ranks) {
  if (ranks.empty()) return "no rank";
  if (ranks.size() == 1) return fmt::format("rank {}", ranks[0]);
  if (ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size()))
    return fmt::format("ranks {}-{}", ranks.front(), ranks.back());
  constexpr size_t kNamed = 12;
  std::string s = "ranks ";
  const size_t named = std::min(ranks.size(), kNamed);
  for (size_t i = 0; i < named; ++i) {
    if (i > 0) s += i + 1 == ranks.size() ? " and " : ", ";
    s += std::to_string(ranks[i]);
  }
  if (ranks.size() > kNamed) s += fmt::format(" and {} more", ranks.size() - kNamed);
  return s;
}

}  // namespace zt::comm
