// CommStats counts every collective exactly, per group kind and op, by the paper's convention.
#include <gtest/gtest.h>

#include "tests/dist/dist_util.h"

namespace zt::dist {
namespace {

using comm::CommOp;
using comm::GroupKind;
using comm::op_cost;

void expect_counts(const comm::OpCounters& got, const comm::OpCounters& want,
                   std::string_view what) {
  EXPECT_EQ(got.calls, want.calls) << what;
  EXPECT_EQ(got.elements, want.elements) << what;
  EXPECT_EQ(got.bytes, want.bytes) << what;
  EXPECT_NEAR(got.wire_bytes, want.wire_bytes, 1e-6 * (1 + want.wire_bytes)) << what;
}

TEST(CommStats, CountsEveryOpExactly) {
  const int tp = world().size() % 2 == 0 ? 2 : 1;
  comm::Topology topo(world(), tp);
  comm::StepCommMeter meter(topo.stats());
  const int D = topo.dp_size(), T = topo.tp_size();

  HostTensor g(DType::F32, 1023), h(DType::BF16, 4099), rs_in(DType::F16, 7 * D),
      rs_out(DType::F16, 7), ag_out(DType::F32, 1023 * D), ag_in(DType::F32, 1023),
      b(DType::BF16, 7);
  meter.begin_step();
  topo.dp().all_reduce(g.t());
  topo.dp().all_reduce_async(g.t()).wait();
  topo.tp().all_reduce(h.t(), comm::ReduceOp::Max);
  topo.dp().reduce_scatter(rs_in.t(), rs_out.t());
  topo.dp().all_gather(ag_in.t(), ag_out.t());
  topo.dp().all_gather_async(ag_out.t()).wait();
  topo.world().broadcast(b.t(), 0);
  topo.mp().barrier();
  const comm::CommSnapshot s = meter.end_step();

  comm::OpCounters ar = op_cost(CommOp::AllReduce, 1023, 4, D);
  ar += op_cost(CommOp::AllReduce, 1023, 4, D);
  expect_counts(s.at(GroupKind::Dp, CommOp::AllReduce), ar, "dp all_reduce");
  expect_counts(s.at(GroupKind::Tp, CommOp::AllReduce), op_cost(CommOp::AllReduce, 4099, 2, T),
                "tp all_reduce");
  expect_counts(s.at(GroupKind::Dp, CommOp::ReduceScatter),
                op_cost(CommOp::ReduceScatter, 7 * static_cast<uint64_t>(D), 2, D),
                "dp reduce_scatter");
  comm::OpCounters ag = op_cost(CommOp::AllGather, 1023 * static_cast<uint64_t>(D), 4, D);
  ag += ag;
  expect_counts(s.at(GroupKind::Dp, CommOp::AllGather), ag, "dp all_gather");
  // The world counters also include the harness's own barriers? No: begin/end bracket them.
  expect_counts(s.at(GroupKind::World, CommOp::Broadcast),
                op_cost(CommOp::Broadcast, 7, 2, world().size()), "world broadcast");
  EXPECT_EQ(s.at(GroupKind::Mp, CommOp::Barrier).calls, 1u);
  EXPECT_EQ(s.group(GroupKind::Pp).calls, 0u);

  // The paper's numbers, spelled out: all-reduce of n fp32 = 2n·4 bytes, ring wire 2(D-1)/D.
  if (D > 1) {
    EXPECT_EQ(s.at(GroupKind::Dp, CommOp::AllReduce).bytes, 2u * 2 * 1023 * 4);
    EXPECT_DOUBLE_EQ(s.at(GroupKind::Dp, CommOp::AllReduce).wire_bytes,
                     2.0 * 2.0 * (D - 1.0) / D * 1023 * 4);
    EXPECT_EQ(s.at(GroupKind::Dp, CommOp::ReduceScatter).bytes, 7u * D * 2);
    EXPECT_EQ(s.at(GroupKind::Dp, CommOp::AllGather).bytes, 2u * 1023 * D * 4);
  } else {
    EXPECT_EQ(s.group(GroupKind::Dp).bytes, 0u);  // a group of one moves nothing
  }
  EXPECT_EQ(s.group(GroupKind::Dp).calls, 5u);
  EXPECT_NE(s.to_json().find("\"dp\":{\"calls\":5"), std::string::npos) << s.to_json();
}

TEST(CommStats, SharedByAllGroupsOfOneWorld) {
  comm::Topology topo(world(), 1);
  const auto before = world().stats().snapshot();
  HostTensor x(DType::F32, 16);
  topo.dp().all_reduce(x.t());
  const auto d = world().stats().snapshot() - before;
  EXPECT_EQ(d.at(GroupKind::Dp, CommOp::AllReduce).calls, 1u);
  EXPECT_EQ(&topo.stats(), &world().stats());
}

}  // namespace
}  // namespace zt::dist
