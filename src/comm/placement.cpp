#include "src/comm/placement.h"

#include <fmt/format.h>

#include <set>
#include <utility>

namespace zt::comm {

namespace {

// The first rank of every group of `kind`, in world-rank order.
std::vector<int> group_leaders(const ParallelGrid& grid, GroupKind kind) {
  std::vector<int> leaders;
  for (int r = 0; r < grid.world(); ++r)
    if (grid.group_ranks(kind, r).front() == r) leaders.push_back(r);
  return leaders;
}

std::string group_text(const std::vector<int>& ranks, const std::vector<std::string>& hosts) {
  const auto host = [&](int r) -> const std::string& { return hosts.at(static_cast<size_t>(r)); };
  bool one_host = true;
  for (int r : ranks) one_host = one_host && host(r) == host(ranks.front());
  std::string t = "[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    t += fmt::format("{}{}", i ? " " : "", ranks[i]);
    if (!one_host) t += fmt::format("@{}", host(ranks[i]));
  }
  t += "]";
  if (one_host) t += fmt::format("@{}", host(ranks.front()));
  return t;
}

}  // namespace

std::string layout_text(const ParallelGrid& grid, const std::vector<std::string>& hosts) {
  std::set<std::string> distinct(hosts.begin(), hosts.end());
  std::string t = fmt::format("layout: tp={} pp={} dp={}", grid.tp(), grid.pp(), grid.dp());
  if (grid.cp() > 1) t += fmt::format(" cp={}", grid.cp());
  if (grid.ep() > 1) t += fmt::format(" ep={}", grid.ep());
  t += fmt::format(" over {} rank(s) on {} host(s)", grid.world(), distinct.size());
  // dp: the data × context group under context parallelism (what ZeRO partitions over).
  const std::pair<GroupKind, const char*> kinds[] = {
      {GroupKind::Tp, "tp"}, {GroupKind::Cp, "cp"},
      {GroupKind::Pp, "pp"}, {GroupKind::Dp, grid.cp() > 1 ? "dp x cp" : "dp"},
      {GroupKind::Ep, "ep"}, {GroupKind::Edp, "edp"}};
  for (const auto& [kind, name] : kinds) {
    if (grid.group_ranks(kind, 0).size() < 2) continue;  // groups of one say nothing
    if ((kind == GroupKind::Ep || kind == GroupKind::Edp) && grid.ep() == 1) continue;
    t += fmt::format("\n  {}:", name);
    for (int leader : group_leaders(grid, kind)) {
      t += ' ';
      t += group_text(grid.group_ranks(kind, leader), hosts);
    }
  }
  return t;
}

std::vector<int> tp_group_spanning_nodes(const ParallelGrid& grid,
                                         const std::vector<int>& node_of) {
  for (int leader : group_leaders(grid, GroupKind::Tp)) {
    const std::vector<int> ranks = grid.group_ranks(GroupKind::Tp, leader);
    for (int r : ranks)
      if (node_of.at(static_cast<size_t>(r)) != node_of.at(static_cast<size_t>(leader)))
        return ranks;
  }
  return {};
}

std::string tp_spanning_message(const ParallelGrid& grid, const std::vector<int>& ranks,
                                const std::vector<std::string>& hosts) {
  return fmt::format(
      "tensor-parallel group {} spans hosts, so every layer's all-reduce crosses the network; "
      "place consecutive ranks on one host (mpirun --map-by slot or --map-by ppr:N:node with N a "
      "multiple of {}, srun --distribution=block), or pass --tp-within-node=false to run anyway",
      group_text(ranks, hosts), grid.tp());
}

}  // namespace zt::comm
