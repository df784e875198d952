// NcclCommunicator on several ranks, one GPU each (mpirun -np N, N <= GPUs of the node): every
// op's result against the same op through MpiCommunicator on host copies, CommStats equal to
// MPI's, Topology's groups, and the timeout path (ncclCommAbort + an error naming op and group).
// Where the node has fewer GPUs than ranks, every test skips visibly and CTest reports "Skipped".
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_backend.h"
#include "src/comm/nccl_communicator.h"
#include "src/comm/nccl_groups.h"
#include "src/comm/topology.h"
#include "src/core/cuda_allocator.h"
#include "src/core/cuda_check.h"
#include "src/core/cuda_device.h"
#include "src/core/half.h"
#include "tests/dist/dist_env.h"
#include "tests/gpu/device_vec.h"

namespace zt::comm {
namespace {

using gpu_test::DeviceVec;

struct Gpu {
  Gpu() {
    cuda::select_device(dist::runtime().local_rank());
    dev = std::make_unique<MemoryPool>(make_cuda_allocator());
    backend = std::make_unique<CudaBackend>();
    ctx = NcclContext{&dist::runtime().stats(), &dist::runtime().watchdog(), dev.get(), nullptr,
                      backend.get()};
    world = NcclCommunicator::world(ctx);
  }
  std::unique_ptr<MemoryPool> dev;
  std::unique_ptr<CudaBackend> backend;  // copies for the groups of one split from the world
  NcclContext ctx;
  std::unique_ptr<NcclCommunicator> world;
};

std::unique_ptr<Gpu> g_gpu;

Gpu& gpu() {
  if (!g_gpu) {
    g_gpu = std::make_unique<Gpu>();
    dist::on_teardown([] { g_gpu.reset(); });
  }
  return *g_gpu;
}

// Every rank of a node sees the same devices, so every rank decides alike.
#define ZT_REQUIRE_GPU_PER_RANK()                                                               \
  do {                                                                                          \
    if (cuda::device_count() < dist::runtime().local_size())                                    \
      GTEST_SKIP() << cuda::device_count() << " CUDA device(s) for "                            \
                   << dist::runtime().local_size() << " ranks on this node: NCCL test skipped"; \
  } while (0)

std::vector<float> values(size_t n, int rank) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(rank + 1) * 0.5f + static_cast<float>(i % 17);
  return v;
}

Tensor host_tensor(std::vector<float>& v) {
  return Tensor(v.data(), Shape{static_cast<int64_t>(v.size())}, DType::F32);
}

TEST(NcclMultiRank, Fp32CollectivesMatchMpi) {
  ZT_REQUIRE_GPU_PER_RANK();
  NcclCommunicator& n = *gpu().world;
  MpiCommunicator& m = dist::world();
  const int r = n.rank(), p = n.size();
  constexpr size_t kM = 1000;

  std::vector<float> h = values(kM * static_cast<size_t>(p), r);
  DeviceVec<float> d(h, DType::F32, *gpu().dev);
  n.all_reduce(d.t);
  m.all_reduce(host_tensor(h));
  EXPECT_EQ(d.host(), h);  // sums of small integers and halves: exact in any order

  std::vector<float> hin = values(kM * static_cast<size_t>(p), r), hout(kM);
  DeviceVec<float> din(hin, DType::F32, *gpu().dev), dout(hout, DType::F32, *gpu().dev);
  n.reduce_scatter(din.t, dout.t, ReduceOp::Max);
  m.reduce_scatter(host_tensor(hin), host_tensor(hout), ReduceOp::Max);
  EXPECT_EQ(dout.host(), hout);

  std::vector<float> mine = values(kM, r), all(kM * static_cast<size_t>(p));
  DeviceVec<float> dmine(mine, DType::F32, *gpu().dev), dall(all, DType::F32, *gpu().dev);
  n.all_gather(dmine.t, dall.t);
  m.all_gather(host_tensor(mine), host_tensor(all));
  EXPECT_EQ(dall.host(), all);

  std::vector<float> b = values(kM, r);
  DeviceVec<float> db(b, DType::F32, *gpu().dev);
  n.broadcast(db.t, p - 1);
  m.broadcast(host_tensor(b), p - 1);
  EXPECT_EQ(db.host(), b);
  n.barrier();
}

TEST(NcclMultiRank, Bf16AllReduceIsCloseToMpisFp32Rounding) {
  ZT_REQUIRE_GPU_PER_RANK();
  NcclCommunicator& n = *gpu().world;
  const int r = n.rank();
  std::vector<bf16> h(4096);
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = to_bf16(std::sin(0.37f * static_cast<float>(i) + static_cast<float>(r)));
  std::vector<bf16> via_mpi = h;
  DeviceVec<bf16> d(h, DType::BF16, *gpu().dev);
  n.all_reduce(d.t);
  dist::world().all_reduce(
      Tensor(via_mpi.data(), Shape{static_cast<int64_t>(h.size())}, DType::BF16));
  const auto got = d.host();
  // NCCL rounds to bf16 after each of its steps, MPI once: allow a few bf16 ulps of |sum| <= N.
  const double tol = 0.02 * dist::world().size();
  for (size_t i = 0; i < h.size(); ++i)
    EXPECT_NEAR(to_float(got[i]), to_float(via_mpi[i]), tol) << i;
}

TEST(NcclMultiRank, SendRecvRing) {
  ZT_REQUIRE_GPU_PER_RANK();
  NcclCommunicator& n = *gpu().world;
  const int r = n.rank(), p = n.size();
  DeviceVec<float> out(values(256, r), DType::F32, *gpu().dev),
      in(std::vector<float>(256, 0.0f), DType::F32, *gpu().dev);
  // Even ranks send first, odd ranks receive first: an NCCL send holds its stream until the
  // matching recv runs, so all-send-first would deadlock (any world size >= 2 works).
  if (r % 2 == 0) {
    n.send(out.t, (r + 1) % p);
    n.recv(in.t, (r + p - 1) % p);
  } else {
    n.recv(in.t, (r + p - 1) % p);
    n.send(out.t, (r + 1) % p);
  }
  EXPECT_EQ(in.host(), values(256, (r + p - 1) % p));
}

// The interleaved pipeline's steady-phase batch (pipeline/exchange.h): every rank sends to both
// neighbours and receives from both in one group, messages of 16 MiB (beyond NCCL's buffering,
// NCCL_BUFFSIZE 4 MiB by default), so no order inside the batch may wait for another. On two
// ranks both messages go to the same peer: matched in the order listed.
TEST(NcclMultiRank, BatchOfFourCompletesBeyondBuffering) {
  ZT_REQUIRE_GPU_PER_RANK();
  NcclCommunicator& n = *gpu().world;
  const int r = n.rank(), p = n.size(), next = (r + 1) % p, prev = (r + p - 1) % p;
  const size_t count = size_t{1} << 22;
  DeviceVec<float> fwd(values(count, r), DType::F32, *gpu().dev),
      bwd(values(count, r + p), DType::F32, *gpu().dev),
      from_prev(std::vector<float>(count, 0.0f), DType::F32, *gpu().dev),
      from_next(std::vector<float>(count, 0.0f), DType::F32, *gpu().dev);
  const std::vector<Communicator::PeerOp> ops{{true, fwd.t, next, 0},
                                              {true, bwd.t, prev, 1},
                                              {false, from_prev.t, prev, 0},
                                              {false, from_next.t, next, 1}};
  for (Handle& h : n.batch_async(ops)) h.wait();
  EXPECT_EQ(from_prev.host(), values(count, prev));
  EXPECT_EQ(from_next.host(), values(count, next + p));
}

TEST(NcclMultiRank, AsyncOpsOverlapAndComplete) {
  ZT_REQUIRE_GPU_PER_RANK();
  NcclCommunicator& n = *gpu().world;
  cuda::Stream compute;
  n.set_compute_stream(compute.get());
  std::vector<float> h = values(1 << 20, n.rank()), expect = h;
  dist::world().all_reduce(host_tensor(expect));
  DeviceVec<float> a(h, DType::F32, *gpu().dev), b(h, DType::F32, *gpu().dev);
  Handle ha = n.all_reduce_async(a.t);
  Handle hb = n.all_reduce_async(b.t);
  hb.wait();
  ha.wait();
  compute.synchronize();  // wait() ordered the compute stream; the host reads after it
  EXPECT_EQ(a.host(), expect);
  EXPECT_EQ(b.host(), expect);
  n.set_compute_stream(nullptr);
}

TEST(NcclMultiRank, CommStatsCountExactlyAsMpi) {
  ZT_REQUIRE_GPU_PER_RANK();
  NcclCommunicator& n = *gpu().world;
  MpiCommunicator& m = dist::world();
  const auto p = static_cast<size_t>(n.size());
  auto run = [&](Communicator& c, Tensor big, Tensor small, Tensor half) {
    c.all_reduce(big);
    c.all_reduce_async(half).wait();
    c.reduce_scatter(big, small);
    c.all_gather(small, big);
    c.all_gather_async(big).wait();
    c.broadcast(half, 0);
    c.barrier();
  };
  std::vector<float> hb(64 * p), hs(64);
  std::vector<bf16> hh(33);
  const CommSnapshot s0 = m.stats().snapshot();
  run(m, host_tensor(hb), host_tensor(hs),
      Tensor(hh.data(), Shape{static_cast<int64_t>(hh.size())}, DType::BF16));
  const CommSnapshot s1 = m.stats().snapshot();
  DeviceVec<float> db(hb, DType::F32, *gpu().dev), ds(hs, DType::F32, *gpu().dev);
  DeviceVec<bf16> dh(hh, DType::BF16, *gpu().dev);
  run(n, db.t, ds.t, dh.t);
  const CommSnapshot s2 = m.stats().snapshot();
  const CommSnapshot via_mpi = s1 - s0, via_nccl = s2 - s1;
  for (size_t g = 0; g < kNumGroupKinds; ++g)
    for (size_t op = 0; op < kNumCommOps; ++op)
      EXPECT_EQ(via_nccl.ops[g][op], via_mpi.ops[g][op])
          << group_kind_name(static_cast<GroupKind>(g)) << " "
          << comm_op_name(static_cast<CommOp>(op));
}

TEST(NcclMultiRank, TopologyGroupsMatchMpi) {
  ZT_REQUIRE_GPU_PER_RANK();
  NcclCommunicator& n = *gpu().world;
  if (n.size() % 2 != 0) GTEST_SKIP() << "needs an even world for tp=2";
  Topology tn(n, 2), tm(dist::world(), 2);
  for (GroupKind k : {GroupKind::Tp, GroupKind::Dp, GroupKind::Pp, GroupKind::Mp}) {
    // NCCL only where the group has another rank (nccl_groups.h).
    EXPECT_EQ(dynamic_cast<NcclCommunicator*>(&tn.group(k)) != nullptr,
              group_needs_nccl(tn.group(k).size()))
        << group_kind_name(k);
    ASSERT_EQ(tn.group(k).size(), tm.group(k).size());
    EXPECT_EQ(tn.group(k).rank(), tm.group(k).rank());
    for (int i = 0; i < tn.group(k).size(); ++i)
      EXPECT_EQ(tn.group(k).world_rank_of(i), tm.group(k).world_rank_of(i));
  }
  std::vector<float> h = values(128, n.rank()), expect = h;
  tm.tp().all_reduce(host_tensor(expect));
  DeviceVec<float> d(h, DType::F32, *gpu().dev);
  tn.tp().all_reduce(d.t);
  EXPECT_EQ(d.host(), expect);
}

// An aborted communicator refuses every later op with an error naming it, on every rank, and
// the other communicators of the world keep working. (A wait past the timeout ends the whole
// job through the watchdog: gpu.nccl_timeout, tests/gpu/nccl_timeout_probe.cpp.)
TEST(NcclMultiRank, AbortedCommunicatorRefusesOpsOthersWork) {
  ZT_REQUIRE_GPU_PER_RANK();
  NcclCommunicator& n = *gpu().world;
  auto victim = n.split(0, n.rank(), GroupKind::Dp);
  DeviceVec<float> d(std::vector<float>(16, 1.0f), DType::F32, *gpu().dev);
  victim->all_reduce(d.t);
  n.barrier();
  auto& v = dynamic_cast<NcclCommunicator&>(*victim);
  v.abort();
  EXPECT_TRUE(v.aborted());
  try {
    victim->all_reduce(d.t);
    ADD_FAILURE() << "an aborted communicator ran an all_reduce";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("all_reduce on group dp"), std::string::npos) << w;
    EXPECT_NE(w.find("aborted"), std::string::npos) << w;
  }
  n.barrier();
  EXPECT_EQ(d.host(), std::vector<float>(16, static_cast<float>(n.size())));
}

}  // namespace
}  // namespace zt::comm
