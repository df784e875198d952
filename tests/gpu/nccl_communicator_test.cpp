// NcclCommunicator in a world of one process (MPI singleton, started only where a GPU is): the
// semantics of every op, and CommStats counting exactly what MpiCommunicator counts for the same
// calls. Several ranks: tests/gpu/nccl_multirank.cpp (under mpirun, with >= 2 GPUs).
#include "src/comm/nccl_communicator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/cuda/cuda_backend.h"
#include "src/comm/runtime.h"
#include "src/core/cuda_allocator.h"
#include "src/core/cuda_check.h"
#include "src/core/cuda_device.h"
#include "src/core/half.h"
#include "tests/gpu/device_vec.h"
#include "tests/gpu/gpu_test_util.h"

namespace zt::comm {
namespace {

using gpu_test::DeviceVec;

struct World {
  World() {
    cuda::select_device(0);
    rt = std::make_unique<MpiRuntime>(argc, argv, RuntimeOptions{.comm_timeout_s = 60.0});
    host = std::make_unique<MemoryPool>(make_host_allocator());
    dev = std::make_unique<MemoryPool>(make_cuda_allocator());
    mpi = rt->world(*host);
    backend = std::make_unique<CudaBackend>();
    ctx = NcclContext{&rt->stats(), &rt->watchdog(), dev.get(), nullptr, backend.get()};
    nccl = NcclCommunicator::world(ctx);
  }
  ~World() {  // communicators before the pools, everything before MPI_Finalize
    nccl.reset();
    mpi.reset();
    backend.reset();
    dev.reset();
    host.reset();
    rt.reset();
  }
  int argc = 0;
  char** argv = nullptr;
  std::unique_ptr<MpiRuntime> rt;
  std::unique_ptr<MemoryPool> host, dev;
  std::unique_ptr<MpiCommunicator> mpi;
  std::unique_ptr<CudaBackend> backend;  // copies for the groups of one split from the world
  NcclContext ctx;
  std::unique_ptr<NcclCommunicator> nccl;
};

std::unique_ptr<World> g_world;

World& world() {
  if (!g_world) g_world = std::make_unique<World>();
  return *g_world;
}

class WorldTeardown : public testing::Environment {
 public:
  void TearDown() override { g_world.reset(); }
};
[[maybe_unused]] testing::Environment* const g_env =
    testing::AddGlobalTestEnvironment(new WorldTeardown);

std::vector<float> iota(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

TEST(NcclWorldOfOne, SizeRankAndGroups) {
  ZT_REQUIRE_GPU();
  NcclCommunicator& c = *world().nccl;
  EXPECT_EQ(c.size(), 1);
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.kind(), GroupKind::World);
  EXPECT_EQ(c.world_rank_of(0), 0);
  auto dp = c.split(0, 0, GroupKind::Dp);
  EXPECT_EQ(dp->size(), 1);
  EXPECT_EQ(dp->kind(), GroupKind::Dp);
  EXPECT_EQ(&dp->stats(), &c.stats());  // one set of counters per world
  // A group of one gets no NCCL communicator (nccl_groups.h).
  EXPECT_EQ(dynamic_cast<NcclCommunicator*>(dp.get()), nullptr);
}

TEST(NcclWorldOfOne, CollectivesHaveTheirSemantics) {
  ZT_REQUIRE_GPU();
  NcclCommunicator& c = *world().nccl;
  DeviceVec<float> x(iota(1000, 1.0f), DType::F32, *world().dev);
  c.all_reduce(x.t);
  EXPECT_EQ(x.host(), iota(1000, 1.0f));
  c.all_reduce(x.t, ReduceOp::Max);
  EXPECT_EQ(x.host(), iota(1000, 1.0f));

  DeviceVec<float> in(iota(64, 5.0f), DType::F32, *world().dev),
      out(std::vector<float>(64, 0.0f), DType::F32, *world().dev);
  c.reduce_scatter(in.t, out.t);
  EXPECT_EQ(out.host(), iota(64, 5.0f));
  DeviceVec<float> gathered(std::vector<float>(64, 0.0f), DType::F32, *world().dev);
  c.all_gather(in.t, gathered.t);
  EXPECT_EQ(gathered.host(), iota(64, 5.0f));
  c.all_gather(gathered.t);  // in place
  EXPECT_EQ(gathered.host(), iota(64, 5.0f));
  c.reduce_scatter(in.t, in.t);  // in place: this rank's chunk is all of it
  EXPECT_EQ(in.host(), iota(64, 5.0f));
  c.broadcast(x.t, 0);
  EXPECT_EQ(x.host(), iota(1000, 1.0f));
  c.barrier();
}

TEST(NcclWorldOfOne, HalfPrecisionMovesBitExactly) {
  ZT_REQUIRE_GPU();
  NcclCommunicator& c = *world().nccl;
  std::vector<bf16> b(100);
  std::vector<fp16> h(100);
  for (size_t i = 0; i < b.size(); ++i) {
    b[i] = to_bf16(0.1f * static_cast<float>(i) - 3.0f);
    h[i] = to_fp16(0.01f * static_cast<float>(i) - 0.3f);
  }
  DeviceVec<bf16> db(b, DType::BF16, *world().dev);
  DeviceVec<fp16> dh(h, DType::F16, *world().dev);
  c.all_reduce(db.t);
  c.all_reduce(dh.t);
  const auto rb = db.host();
  const auto rh = dh.host();
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(to_float(rb[i]), to_float(b[i])) << i;
    EXPECT_EQ(to_float(rh[i]), to_float(h[i])) << i;
  }
}

// The first `n` floats of `b`, read in order on `s`.
std::vector<float> read_on(const cuda::Stream& s, const Buffer& b, size_t n) {
  std::vector<float> r(n);
  ZT_CUDA_CHECK(
      cudaMemcpyAsync(r.data(), b.data(), n * sizeof(float), cudaMemcpyDeviceToHost, s.get()));
  s.synchronize();
  return r;
}

// The float whose four bytes are 0x3f (what cudaMemsetAsync(p, 0x3f, 4) leaves): ~0.747.
float bytes_3f() {
  float f = 0.0f;
  const uint32_t bits = 0x3f3f3f3fu;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(NcclWorldOfOne, AsyncHandlesCompleteAndOrderTheComputeStream) {
  ZT_REQUIRE_GPU();
  NcclCommunicator& c = *world().nccl;
  cuda::Stream compute;
  c.set_compute_stream(compute.get());
  DeviceVec<float> x(std::vector<float>(1 << 20, 0.0f), DType::F32, *world().dev);
  // Written on the compute stream just before the collective: the comm stream must see it.
  ZT_CUDA_CHECK(cudaMemsetAsync(x.buf.data(), 0, x.t.bytes(), compute.get()));
  ZT_CUDA_CHECK(cudaMemsetAsync(x.buf.data(), 0x3f, 4, compute.get()));  // first float: ~0.747
  Handle h = c.all_reduce_async(x.t);
  while (!h.test()) {
  }
  EXPECT_TRUE(h.done());
  Handle g = c.all_reduce_async(x.t);
  g.wait();
  const std::vector<float> r = read_on(compute, x.buf, 4);
  EXPECT_EQ(r[0], bytes_3f());
  EXPECT_EQ(r[1], 0.0f);
  c.set_compute_stream(nullptr);
}

// wait() enqueues a stream wait and returns: with the compute stream held by a 300 ms host
// function, the collective (ordered after it) cannot have run, yet issue + wait return at once;
// the compute stream then sees the result, and the watchdog forgets the op once it completed.
TEST(NcclWorldOfOne, WaitOrdersTheComputeStreamWithoutBlockingTheHost) {
  ZT_REQUIRE_GPU();
  NcclCommunicator& c = *world().nccl;
  cuda::Stream compute;
  c.set_compute_stream(compute.get());
  DeviceVec<float> x(std::vector<float>(1024, 0.0f), DType::F32, *world().dev);
  ZT_CUDA_CHECK(cudaLaunchHostFunc(
      compute.get(), [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); },
      nullptr));
  ZT_CUDA_CHECK(cudaMemsetAsync(x.buf.data(), 0x3f, 4, compute.get()));
  const auto t0 = std::chrono::steady_clock::now();
  c.all_reduce(x.t);  // the blocking form: blocking for the device only
  const double host_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(host_ms, 150.0) << "wait() blocked the host";
  EXPECT_FALSE(compute.query());  // still held by the host function
  EXPECT_EQ(read_on(compute, x.buf, 1)[0], bytes_3f());
  for (int i = 0; i < 500 && world().rt->watchdog().tracked() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(world().rt->watchdog().tracked(), 0u);
  c.set_compute_stream(nullptr);
}

TEST(NcclWorldOfOne, RejectsHostTensors) {
  ZT_REQUIRE_GPU();
  std::vector<float> v(8, 1.0f);
  Tensor host(v.data(), Shape{8}, DType::F32, Device::Cpu);
  EXPECT_THROW(world().nccl->all_reduce(host), Error);
}

// The same calls through both backends must move the counters identically.
TEST(NcclWorldOfOne, CommStatsCountExactlyAsMpiCommunicator) {
  ZT_REQUIRE_GPU();
  World& w = world();
  auto run = [](Communicator& c, Tensor a, Tensor half, Tensor in, Tensor out) {
    c.all_reduce(a);
    c.all_reduce(half);
    c.all_reduce_async(a, ReduceOp::Max).wait();
    c.reduce_scatter(in, out);
    c.reduce_scatter_async(in, out).wait();
    c.all_gather(out, in);
    c.all_gather_async(in).wait();
    c.broadcast(a, 0);
    c.broadcast_async(half, 0).wait();
    c.barrier();
    c.barrier_async().wait();
    auto dp = c.split(0, 0, GroupKind::Dp);
    dp->all_reduce(a);
    dp->all_gather(out, in);
  };
  auto delta = [&](Communicator& c, Tensor a, Tensor half, Tensor in, Tensor out) {
    const CommSnapshot before = w.rt->stats().snapshot();
    run(c, a, half, in, out);
    return w.rt->stats().snapshot() - before;
  };
  // Host tensors for MPI.
  std::vector<float> ha(300), hin(128), hout(128);
  std::vector<bf16> hh(77);
  const CommSnapshot m = delta(
      *w.mpi, Tensor(ha.data(), Shape{300}, DType::F32), Tensor(hh.data(), Shape{77}, DType::BF16),
      Tensor(hin.data(), Shape{128}, DType::F32), Tensor(hout.data(), Shape{128}, DType::F32));
  DeviceVec<float> da(ha, DType::F32, *world().dev), din(hin, DType::F32, *world().dev),
      dout(hout, DType::F32, *world().dev);
  DeviceVec<bf16> dh(hh, DType::BF16, *world().dev);
  const CommSnapshot n = delta(*w.nccl, da.t, dh.t, din.t, dout.t);
  for (size_t g = 0; g < kNumGroupKinds; ++g)
    for (size_t op = 0; op < kNumCommOps; ++op)
      EXPECT_EQ(n.ops[g][op], m.ops[g][op]) << group_kind_name(static_cast<GroupKind>(g)) << " "
                                            << comm_op_name(static_cast<CommOp>(op));
  EXPECT_EQ(n.at(GroupKind::World, CommOp::AllReduce).calls, 3u);
  EXPECT_EQ(n.at(GroupKind::Dp, CommOp::AllGather).elements, 128u);
}

}  // namespace
}  // namespace zt::comm
