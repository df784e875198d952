#include "src/comm/topology.h"

namespace zt::comm {

ParallelGrid::ParallelGrid(int world, int tp, int pp, int cp, int ep)
    : world_(world), tp_(tp), pp_(pp), cp_(cp), dp_(0), ep_(ep) {
  ZT_REQUIRE(world >= 1, "world size must be >= 1, got {}", world);
  ZT_REQUIRE(tp >= 1, "--tensor-model-parallel-size must be >= 1, got {}", tp);
  ZT_REQUIRE(pp >= 1, "--pipeline-model-parallel-size must be >= 1, got {}", pp);
  ZT_REQUIRE(cp >= 1, "--context-parallel-size must be >= 1, got {}", cp);
  const int mp = tp * pp * cp;
  ZT_REQUIRE(world % mp == 0,
             "world size {} is not divisible by tensor-model-parallel-size {} x "
             "pipeline-model-parallel-size {} x context-parallel-size {} = {}; launch a multiple "
             "of {} ranks or change the sizes",
             world, tp, pp, cp, mp, mp);
  dp_ = world / mp;
  ZT_REQUIRE(ep >= 1 && (dp_ * cp) % ep == 0,
             "--expert-model-parallel-size {} does not divide the {} data x context ranks; "
             "choose a divisor",
             ep, dp_ * cp);
}

GridCoord ParallelGrid::coord_of(int rank) const {
  ZT_CHECK(rank >= 0 && rank < world_, "rank {} outside world of {}", rank, world_);
  GridCoord c;
  c.tp = rank % tp_;
  c.cp = (rank / tp_) % cp_;
  c.dp = (rank / (tp_ * cp_)) % dp_;
  c.pp = rank / (tp_ * cp_ * dp_);
  return c;
}

int ParallelGrid::group_color(GroupKind kind, int rank) const {
  const GridCoord c = coord_of(rank);
  switch (kind) {
    case GroupKind::Tp:
      return c.cp + cp_ * (c.dp + dp_ * c.pp);
    case GroupKind::Cp:
      return c.tp + tp_ * (c.dp + dp_ * c.pp);
    case GroupKind::Dp:
      return c.tp + tp_ * c.pp;
    case GroupKind::Pp:
      return c.tp + tp_ * (c.cp + cp_ * c.dp);
    case GroupKind::Mp:
      return c.cp + cp_ * c.dp;
    case GroupKind::Ep:
      return (c.tp + tp_ * c.pp) * (dp_ * cp_ / ep_) + dp_group_rank(c) / ep_;
    case GroupKind::Edp:
      return (c.tp + tp_ * c.pp) * ep_ + dp_group_rank(c) % ep_;
    case GroupKind::World:
    case GroupKind::kCount:
      break;
  }
  return 0;
}

int ParallelGrid::group_key(GroupKind kind, int rank) const {
  const GridCoord c = coord_of(rank);
  switch (kind) {
    case GroupKind::Tp:
      return c.tp;
    case GroupKind::Cp:
      return c.cp;
    case GroupKind::Dp:
      return c.cp + cp_ * c.dp;
    case GroupKind::Pp:
      return c.pp;
    case GroupKind::Mp:
      return c.tp + tp_ * c.pp;
    case GroupKind::Ep:
      return dp_group_rank(c) % ep_;
    case GroupKind::Edp:
      return dp_group_rank(c) / ep_;
    case GroupKind::World:
    case GroupKind::kCount:
      break;
  }
  return rank;
}

std::vector<int> ParallelGrid::group_ranks(GroupKind kind, int rank) const {
  const GridCoord c = coord_of(rank);
  std::vector<int> r;
  switch (kind) {
    case GroupKind::Tp:
      for (int i = 0; i < tp_; ++i) r.push_back(rank_of({i, c.dp, c.pp, c.cp}));
      break;
    case GroupKind::Cp:
      for (int i = 0; i < cp_; ++i) r.push_back(rank_of({c.tp, c.dp, c.pp, i}));
      break;
    case GroupKind::Dp:
      for (int d = 0; d < dp_; ++d)
        for (int i = 0; i < cp_; ++i) r.push_back(rank_of({c.tp, d, c.pp, i}));
      break;
    case GroupKind::Pp:
      for (int i = 0; i < pp_; ++i) r.push_back(rank_of({c.tp, c.dp, i, c.cp}));
      break;
    case GroupKind::Mp:
      for (int p = 0; p < pp_; ++p)
        for (int t = 0; t < tp_; ++t) r.push_back(rank_of({t, c.dp, p, c.cp}));
      break;
    case GroupKind::Ep:
    case GroupKind::Edp: {
      const int g = dp_group_rank(c), n = kind == GroupKind::Ep ? ep_ : dp_ * cp_ / ep_;
      for (int i = 0; i < n; ++i) {
        const int h = kind == GroupKind::Ep ? g / ep_ * ep_ + i : i * ep_ + g % ep_;
        r.push_back(rank_of({c.tp, h / cp_, c.pp, h % cp_}));
      }
      break;
    }
    case GroupKind::World:
    case GroupKind::kCount:
      for (int i = 0; i < world_; ++i) r.push_back(i);
      break;
  }
  return r;
}

void validate_parallel_sizes(int world, int tp, int pp, int cp) {
  const ParallelGrid grid(world, tp, pp, cp);  // divisibility and ranges
}

Topology::Topology(Communicator& world, int tp, int pp, Communicator* host_world, int cp, int ep)
    : world_(&world),
      host_world_(host_world),
      grid_((validate_parallel_sizes(world.size(), tp, pp, cp), world.size()), tp, pp, cp, ep) {
  ZT_CHECK(world.kind() == GroupKind::World, "Topology needs the world communicator, got {}",
           world.name());
  ZT_CHECK(host_world == nullptr ||
               (host_world->kind() == GroupKind::World && host_world->size() == world.size() &&
                host_world->rank() == world.rank()),
           "the host world must be a world group of the same ranks");
  const int r = world.rank();
  coord_ = grid_.coord_of(r);
  tp_ = world.split(grid_.group_color(GroupKind::Tp, r), grid_.group_key(GroupKind::Tp, r),
                    GroupKind::Tp);
  cp_ = world.split(grid_.group_color(GroupKind::Cp, r), grid_.group_key(GroupKind::Cp, r),
                    GroupKind::Cp);
  dp_ = world.split(grid_.group_color(GroupKind::Dp, r), grid_.group_key(GroupKind::Dp, r),
                    GroupKind::Dp);
  pp_ = world.split(grid_.group_color(GroupKind::Pp, r), grid_.group_key(GroupKind::Pp, r),
                    GroupKind::Pp);
  mp_ = world.split(grid_.group_color(GroupKind::Mp, r), grid_.group_key(GroupKind::Mp, r),
                    GroupKind::Mp);
  if (pp > 1) {
    // The first and last stage of this pipeline (Megatron-LM's embedding group); the middle
    // stages form groups of their own that nothing uses. Counted as pipeline traffic.
    const bool ends = coord_.pp == 0 || coord_.pp == pp - 1;
    embedding_ = pp_->split(ends ? 0 : 1, coord_.pp, GroupKind::Pp);
  }
  if (ep > 1) {
    ep_ = world.split(grid_.group_color(GroupKind::Ep, r), grid_.group_key(GroupKind::Ep, r),
                      GroupKind::Ep);
    edp_ = world.split(grid_.group_color(GroupKind::Edp, r), grid_.group_key(GroupKind::Edp, r),
                       GroupKind::Edp);
  }
}

int Topology::groups() const {
  int n = 0;
  for (const auto* g : {&tp_, &cp_, &dp_, &pp_, &mp_, &embedding_, &ep_, &edp_})
    n += *g != nullptr ? 1 : 0;
  return n;
}

Communicator& Topology::group(GroupKind kind) const {
  switch (kind) {
    case GroupKind::Tp:
      return *tp_;
    case GroupKind::Cp:
      return *cp_;
    case GroupKind::Dp:
      return *dp_;
    case GroupKind::Pp:
      return *pp_;
    case GroupKind::Mp:
      return *mp_;
    case GroupKind::Ep:
      if (ep_ != nullptr) return *ep_;
      break;
    case GroupKind::Edp:
      if (edp_ != nullptr) return *edp_;
      break;
    case GroupKind::World:
    case GroupKind::kCount:
      break;
  }
  return *world_;
}

}  // namespace zt::comm
