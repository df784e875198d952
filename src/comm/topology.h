#pragma once
// Topology: the one process-group manager (Megatron-core parallel_state, without global state).
// Built once from the world communicator and passed to whatever needs a group.
//
// The world is a grid TP × CP × DP × PP with tp fastest, then cp (context parallelism), then dp,
// then pp:
//   rank = tp_rank + tp·(cp_rank + cp·(dp_rank + dp·pp_rank))
// so a node's consecutive ranks form its TP groups, then its CP groups (both exchange
// activations every layer: they stay on the intra-node links before dp does).
// Groups of a rank:
//   tp: same (cp, dp, pp), tp_rank varies    cp: same (tp, dp, pp), cp_rank varies
//   dp: same (tp, pp), cp_rank and dp_rank vary: the data × context ranks, which hold the same
//       parameters and see different tokens (Megatron's data-parallel group with context
//       parallelism): gradients are summed and ZeRO partitions over it. It is the data-parallel
//       group itself at cp = 1.
//   pp: same (tp, cp, dp), pp_rank varies    mp (model parallel = TP×PP): same (cp, dp)
//   ep (expert parallelism, ep > 1): ep consecutive members of the dp group (by its order below,
//       context ranks first), which split a mixture's experts; edp: the dp group's members at the
//       same place in their ep group, which hold the same experts (docs/design/moe.md)
// A group's members are ordered by the coordinate(s) that vary (dp: cp_rank + cp·dp_rank; mp:
// tp_rank + tp·pp_rank; ep and edp: their dp group rank).
#include <memory>
#include <vector>

#include "src/comm/communicator.h"

namespace zt::comm {

struct GridCoord {
  int tp = 0, dp = 0, pp = 0, cp = 0;
  bool operator==(const GridCoord&) const = default;
};

// The grid arithmetic, no MPI. Throws zt::InputError when world is not divisible by tp·pp·cp or a
// size is < 1.
class ParallelGrid {
 public:
  // `ep` divides dp · cp (InputError otherwise).
  ParallelGrid(int world, int tp, int pp, int cp = 1, int ep = 1);
  int world() const { return world_; }
  int tp() const { return tp_; }
  int pp() const { return pp_; }
  int cp() const { return cp_; }
  int dp() const { return dp_; }  // the data-parallel degree, without the context ranks
  int ep() const { return ep_; }
  int rank_of(GridCoord c) const { return c.tp + tp_ * (c.cp + cp_ * (c.dp + dp_ * c.pp)); }
  GridCoord coord_of(int rank) const;
  // World ranks of `rank`'s group of this kind, in group-rank order.
  std::vector<int> group_ranks(GroupKind kind, int rank) const;
  // The MPI_Comm_split arguments that produce that group.
  int group_color(GroupKind kind, int rank) const;
  int group_key(GroupKind kind, int rank) const;

 private:
  int world_, tp_, pp_, cp_, dp_, ep_;
  int dp_group_rank(GridCoord c) const { return c.cp + cp_ * c.dp; }
};

// The checks on --tensor-model-parallel-size / --pipeline-model-parallel-size /
// --context-parallel-size for a world size, as zt::InputError (the same on every rank, before
// anything is allocated).
void validate_parallel_sizes(int world, int tp, int pp, int cp = 1);

class Topology {
 public:
  // Collective over `world` (which must outlive the Topology): validates the sizes and splits
  // the tp, cp, dp, pp and mp groups. The groups are of world's kind (MPI or NCCL): split() makes
  // them. `host_world`, when given, is a world group over host memory (MPI) for the host-side
  // bookkeeping collectives (metrics, gradient-norm scalars, checkpoint metadata) of a run whose
  // groups move device memory; it must outlive the Topology too.
  Topology(Communicator& world, int tp, int pp = 1, Communicator* host_world = nullptr, int cp = 1,
           int ep = 1);
  // The groups the constructor splits from the world: tp, cp, dp, pp, mp, with pp > 1 the
  // embedding group, with ep > 1 the ep and edp groups. groups() counts the ones this Topology
  // made.
  static constexpr int split_groups(int pp, int ep = 1) {
    return (pp > 1 ? 6 : 5) + (ep > 1 ? 2 : 0);
  }
  int groups() const;

  const ParallelGrid& grid() const { return grid_; }
  int rank() const { return world_->rank(); }
  int world_size() const { return grid_.world(); }
  GridCoord coord() const { return coord_; }
  int tp_rank() const { return coord_.tp; }
  // The data-parallel coordinate and degree, without the context ranks (which sample a rank
  // reads); dp() is the data × context group.
  int dp_rank() const { return coord_.dp; }
  int pp_rank() const { return coord_.pp; }
  int cp_rank() const { return coord_.cp; }
  int tp_size() const { return grid_.tp(); }
  int dp_size() const { return grid_.dp(); }
  int pp_size() const { return grid_.pp(); }
  int cp_size() const { return grid_.cp(); }

  Communicator& world() const { return *world_; }
  // The world over host memory: world() itself unless another was given.
  Communicator& host_world() const { return host_world_ != nullptr ? *host_world_ : *world_; }
  Communicator& tp() const { return *tp_; }
  Communicator& cp() const { return *cp_; }
  // The data × context group (see above): what gradients are summed over and ZeRO partitions
  // over, dp_size() · cp_size() ranks.
  Communicator& dp() const { return *dp_; }
  Communicator& pp() const { return *pp_; }
  Communicator& mp() const { return *mp_; }
  // pp > 1: the first and last stage of this rank's pipeline (same tp and dp rank), which hold
  // the tied word embedding; null at pp = 1.
  Communicator* embedding() const { return embedding_.get(); }
  // ep > 1: the ranks splitting the experts, and those holding the same experts; null at ep = 1.
  Communicator* ep() const { return ep_.get(); }
  Communicator* edp() const { return edp_.get(); }
  int ep_size() const { return grid_.ep(); }
  Communicator& group(GroupKind kind) const;

  // World ranks of the first and last member of this rank's group of `kind`.
  int first_rank(GroupKind kind) const { return group(kind).world_rank_of(0); }
  int last_rank(GroupKind kind) const {
    const Communicator& g = group(kind);
    return g.world_rank_of(g.size() - 1);
  }
  bool is_first(GroupKind kind) const { return group(kind).rank() == 0; }
  bool is_last(GroupKind kind) const {
    const Communicator& g = group(kind);
    return g.rank() == g.size() - 1;
  }
  CommStats& stats() const { return world_->stats(); }

 private:
  Communicator* world_;
  Communicator* host_world_ = nullptr;
  ParallelGrid grid_;
  GridCoord coord_;
  std::unique_ptr<Communicator> tp_, cp_, dp_, pp_, mp_, embedding_, ep_, edp_;
};

}  // namespace zt::comm
