// A world of one rank without MPI: every collective is this rank's own data (copied where output
// and input differ), counted in CommStats as MpiCommunicator counts a group of one (calls and
// elements, 0 bytes), and the ScalarReducer over it leaves every value as it is, allocating
// nothing.
#include "src/comm/self_communicator.h"

#include <gtest/gtest.h>

#include <vector>

#include "src/comm/scalar_reducer.h"
#include "src/core/error.h"

namespace zt::comm {
namespace {

Tensor view(std::vector<float>& v) {
  return Tensor(v.data(), {static_cast<int64_t>(v.size())}, DType::F32);
}

TEST(SelfCommunicator, CollectivesAreTheRanksOwnDataCountedAtZeroBytes) {
  SelfCommunicator world(cpu_backend());
  EXPECT_EQ(world.size(), 1);
  EXPECT_EQ(world.rank(), 0);
  EXPECT_EQ(world.kind(), GroupKind::World);
  std::vector<float> a = {1, 2, 3}, b(3, 0.0f);
  world.all_reduce(view(a));
  EXPECT_EQ(a, (std::vector<float>{1, 2, 3}));
  world.reduce_scatter(view(a), view(b));
  EXPECT_EQ(b, a);
  b.assign(3, 0.0f);
  world.all_gather_async(view(a), view(b)).wait();
  EXPECT_EQ(b, a);
  world.all_gather(view(a));  // in place
  b.assign(3, 0.0f);
  const std::vector<int64_t> three = {3};
  world.all_to_all_v(view(a), three, view(b), three);
  EXPECT_EQ(b, a);
  world.all_to_all(view(a), view(b));
  world.broadcast(view(a), 0);
  world.barrier();
  const CommSnapshot& s = world.stats().snapshot();
  for (CommOp op : {CommOp::AllReduce, CommOp::ReduceScatter, CommOp::AllGather, CommOp::Broadcast,
                    CommOp::AllToAll}) {
    const OpCounters& c = s.at(GroupKind::World, op);
    EXPECT_GE(c.calls, 1u) << comm_op_name(op);
    EXPECT_EQ(c.elements, 3u * c.calls) << comm_op_name(op);
    EXPECT_EQ(c.bytes, 0u) << comm_op_name(op);
    EXPECT_EQ(c.wire_bytes, 0.0) << comm_op_name(op);
  }
  EXPECT_EQ(s.at(GroupKind::World, CommOp::Barrier).calls, 1u);
  EXPECT_THROW(world.send(view(a), 0), Error);
  EXPECT_THROW(world.recv(view(a), 0), Error);
}

TEST(SelfCommunicator, SplitsShareTheWorldsCounters) {
  SelfWorld self;
  Topology& topo = self.topology();
  EXPECT_EQ(topo.world_size(), 1);
  EXPECT_EQ(topo.tp_size() * topo.dp_size() * topo.pp_size(), 1);
  EXPECT_EQ(topo.embedding(), nullptr);
  std::vector<float> a = {4, 5};
  topo.dp().all_reduce(view(a));
  topo.tp().all_reduce(view(a));
  const CommSnapshot& s = topo.stats().snapshot();
  EXPECT_EQ(s.at(GroupKind::Dp, CommOp::AllReduce).calls, 1u);
  EXPECT_EQ(s.at(GroupKind::Tp, CommOp::AllReduce).elements, 2u);
  EXPECT_EQ(s.total().bytes, 0u);
}

// A group of one inside a larger world (what NcclCommunicator::split gives the tp group at tp 1):
// its member is this rank's world rank, it counts into the world's counters, and its own splits
// keep both.
TEST(SelfCommunicator, MemberOfALargerWorldNamesItsRankAndSharesTheCounters) {
  CommStats world_stats;
  auto tp = SelfCommunicator::member(cpu_backend(), GroupKind::Tp, world_stats, 5);
  EXPECT_EQ(tp->size(), 1);
  EXPECT_EQ(tp->rank(), 0);
  EXPECT_EQ(tp->world_rank_of(0), 5);
  EXPECT_EQ(&tp->stats(), &world_stats);
  std::vector<float> a = {1, 2, 3}, out(3);
  tp->all_reduce(view(a));
  tp->all_gather(view(a), view(out));
  EXPECT_EQ(out, a);
  const auto again = tp->split(0, 0, GroupKind::Mp);
  EXPECT_EQ(again->world_rank_of(0), 5);
  again->all_reduce(view(a));
  const CommSnapshot& s = world_stats.snapshot();
  EXPECT_EQ(s.at(GroupKind::Tp, CommOp::AllReduce).calls, 1u);
  EXPECT_EQ(s.at(GroupKind::Tp, CommOp::AllGather).calls, 1u);
  EXPECT_EQ(s.at(GroupKind::Mp, CommOp::AllReduce).calls, 1u);
}

TEST(SelfCommunicator, ScalarReducerOfOneLeavesTheValuesAndAllocatesNothing) {
  SelfCommunicator world(cpu_backend());
  MemoryPool pool(make_host_allocator());
  ScalarReducer r(world, pool, 4);
  EXPECT_EQ(pool.total_current(), 0u);
  // Not representable as a pair of floats: a gather through them would round it.
  double v[3] = {1.0 / 3.0, -7.25e-9, 12345.678901234567};
  const double want[3] = {v[0], v[1], v[2]};
  r.mean(v);
  r.max(v);
  r.sum(v);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(v[i], want[i]);
  EXPECT_EQ(world.stats().snapshot().total().calls, 0u);
}

}  // namespace
}  // namespace zt::comm
