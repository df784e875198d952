// CommStats arithmetic and the launcher environment parsing (no MPI needed).
#include "src/comm/comm_stats.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "src/comm/runtime.h"

namespace zt::comm {
namespace {

TEST(CommStats, PaperAndRingConventions) {
  const OpCounters ar = op_cost(CommOp::AllReduce, 1000, 2, 4);
  EXPECT_EQ(ar.bytes, 2u * 1000 * 2);
  EXPECT_DOUBLE_EQ(ar.wire_bytes, 2.0 * 3 / 4 * 2000);
  const OpCounters rs = op_cost(CommOp::ReduceScatter, 1000, 4, 8);
  EXPECT_EQ(rs.bytes, 4000u);
  EXPECT_DOUBLE_EQ(rs.wire_bytes, 7.0 / 8 * 4000);
  const OpCounters ag = op_cost(CommOp::AllGather, 1000, 4, 8);
  EXPECT_EQ(ag.bytes, 4000u);
  EXPECT_DOUBLE_EQ(ag.wire_bytes, 7.0 / 8 * 4000);
  // reduce-scatter + all-gather = all-reduce, in both conventions
  EXPECT_EQ(rs.bytes + ag.bytes, op_cost(CommOp::AllReduce, 1000, 4, 8).bytes);
  EXPECT_DOUBLE_EQ(rs.wire_bytes + ag.wire_bytes,
                   op_cost(CommOp::AllReduce, 1000, 4, 8).wire_bytes);
  const OpCounters one = op_cost(CommOp::AllReduce, 1000, 4, 1);
  EXPECT_EQ(one.calls, 1u);
  EXPECT_EQ(one.elements, 1000u);
  EXPECT_EQ(one.bytes, 0u);
}

TEST(CommStats, SnapshotsDiffPerStep) {
  CommStats s;
  StepCommMeter meter(s);
  s.record(GroupKind::Dp, CommOp::AllReduce, 10, 4, 2);
  meter.begin_step();
  s.record(GroupKind::Dp, CommOp::AllReduce, 100, 4, 2);
  s.record(GroupKind::Tp, CommOp::AllGather, 50, 2, 2);
  const CommSnapshot d = meter.end_step();
  EXPECT_EQ(d.group(GroupKind::Dp).bytes, 800u);
  EXPECT_EQ(d.group(GroupKind::Dp).calls, 1u);
  EXPECT_EQ(d.group(GroupKind::Tp).bytes, 100u);
  EXPECT_EQ(d.total().bytes, 900u);
  EXPECT_EQ(s.snapshot().group(GroupKind::Dp).bytes, 880u);
  const std::string j = d.to_json();
  EXPECT_NE(j.find(R"("dp":{"calls":1,"elements":100,"bytes":800,"wire_bytes":400,)"
                   R"("all_reduce":{"calls":1)"),
            std::string::npos)
      << j;
}

std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* n) {
  auto it = g_env.find(n);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

TEST(LaunchInfo, SlurmThenOpenMpi) {
  g_env = {{"SLURM_PROCID", "5"},
           {"SLURM_LOCALID", "1"},
           {"SLURM_NTASKS", "8"},
           {"OMPI_COMM_WORLD_RANK", "0"}};
  LaunchInfo li = launch_info_from_env(fake_getenv);
  EXPECT_TRUE(li.slurm);
  EXPECT_EQ(li.rank, 5);
  EXPECT_EQ(li.local_rank, 1);
  EXPECT_EQ(li.world, 8);
  g_env = {{"OMPI_COMM_WORLD_RANK", "3"},
           {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
           {"OMPI_COMM_WORLD_SIZE", "4"}};
  li = launch_info_from_env(fake_getenv);
  EXPECT_FALSE(li.slurm);
  EXPECT_EQ(li.rank, 3);
  EXPECT_EQ(li.world, 4);
  g_env = {};
  li = launch_info_from_env(fake_getenv);
  EXPECT_EQ(li.rank, -1);
}

}  // namespace
}  // namespace zt::comm
