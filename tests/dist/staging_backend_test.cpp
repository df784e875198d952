// The CUDA code paths on MPI ranks without a GPU: every layout trained on the staging backend
// (kernels/backend.h: host staging as on CUDA, device memory closed to the host outside backend
// and communicator calls, side copies run as late as their rules allow with NaN in what they
// leave undefined) gives the CPU backend's losses and gradient norms bit for bit. A host read of
// a device pointer would fault here, a missing join or wait would put NaN in the loss, and a
// source reused too early would stop the run: the layouts are those whose code differs when the
// host cannot reach device memory (tensor, pipeline and context parallelism, every ZeRO stage,
// half-precision reductions, activation checkpoints on the host, the offloaded optimizer and
// parameters, mixtures of experts, against the CPU backend's run with every state on the device:
// the tiers give the device tier's bits).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/mpi_communicator.h"
#include "tests/dist/train_testing.h"

namespace zt {
namespace {

struct Layout {
  int tp = 1, pp = 1, cp = 1, stage = 0;
  int act = 0;  // 0 kept, 1 checkpointed, 2 Pa, 3 Pa+cpu
  bool bf16 = false;
  std::string optimizer = "none", param = "none";  // --offload-optimizer, --offload-param
  std::string comm = "p2p";                        // --cp-comm-type
  bool moe = false;  // MoE layers: 4 experts of top 2 with a gated shared expert and a capacity
};

std::string name(const Layout& l) {
  static const char* acts[] = {"", " ckpt", " Pa", " Pa+cpu"};
  return fmt::format("tp {} pp {} cp {} {} stage {}{} {} offload {}/{}{}", l.tp, l.pp, l.cp, l.comm,
                     l.stage, acts[l.act], l.bf16 ? "bf16" : "fp32", l.optimizer, l.param,
                     l.moe ? " moe" : "");
}

TrainOptions options(const Layout& l) {
  TrainOptions o = test::small_gpt(0.1, 3);
  o.num_attention_heads = 4;
  test::set_llama_shape(o, 2);
  o.seq_length = 32;
  o.micro_batch_size = 2;
  o.global_batch_size = 2 * dist::world().size() / (l.tp * l.pp * l.cp) * (l.pp > 1 ? 2 : 1);
  o.tensor_model_parallel_size = l.tp;
  o.sequence_parallel = l.tp > 1;
  test::set_pipeline(o, l.pp, 1);
  o.context_parallel_size = l.cp;
  o.cp_comm_type = l.comm;
  o.zero_stage = l.stage;
  o.checkpoint_activations = l.act >= 1;
  o.partition_activations = l.act >= 2;
  o.cpu_checkpointing = l.act == 3;
  o.bf16 = l.bf16;
  o.offload_optimizer = l.optimizer;
  o.offload_param = l.param;
  o.reduce_bucket_size = 700;  // several buckets and partition units
  if (l.moe) {
    // The routing comes to the host and its rows back to the device each layer; 4 experts of 40
    // rows each are several spans of 700 elements, so parts of one expert run too.
    o.num_experts = 4;
    o.moe_router_topk = 2;
    o.moe_ffn_hidden_size = 20;
    o.moe_aux_loss_coeff = 0.01;
    o.moe_expert_capacity_factor = 1.0;
    o.moe_shared_expert_intermediate_size = 16;
    o.moe_shared_expert_gate = true;
  }
  return o;
}

std::vector<StepMetrics> run(const TrainOptions& o, const Layout& l, bool staging) {
  if (!staging) {
    comm::Topology topo(dist::world(), l.tp, l.pp, nullptr, l.cp);
    Trainer t(o, dist::pool(), topo);
    return t.run(false);
  }
  MemoryPool device(make_staging_device_allocator()), host(make_host_allocator());
  const DeviceContext ctx(cpu_staging_backend(), device, host);
  auto device_world = dist::runtime().world(device);  // where NCCL's groups would be
  auto host_world = dist::runtime().world(host);
  comm::Topology topo(*device_world, l.tp, l.pp, host_world.get(), l.cp);
  Trainer t(o, ctx, topo);
  return t.run(false);
}

void expect_same_bits(const std::vector<Layout>& layouts) {
  const int world = dist::world().size();
  for (const Layout& l : layouts) {
    if (world % (l.tp * l.pp * l.cp) != 0) continue;
    Layout on_device = l;  // the reference: the CPU backend keeps every state on its "device"
    on_device.optimizer = on_device.param = "none";
    const std::vector<StepMetrics> want = run(options(on_device), l, false);
    const std::vector<StepMetrics> got = run(options(l), l, true);
    ASSERT_EQ(got.size(), want.size()) << name(l);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].lm_loss, want[i].lm_loss) << name(l) << " step " << i + 1;
      EXPECT_EQ(got[i].grad_norm, want[i].grad_norm) << name(l) << " step " << i + 1;
    }
  }
}

TEST(StagingBackend, DataParallelStagesGiveTheCpuBits) {
  expect_same_bits({{.stage = 0},
                    {.stage = 1, .bf16 = true},
                    {.stage = 2},
                    {.stage = 3, .bf16 = true},
                    {.stage = 3, .act = 3}});
}

TEST(StagingBackend, ModelParallelLayoutsGiveTheCpuBits) {
  expect_same_bits({{.tp = 2, .stage = 1, .bf16 = true},
                    {.tp = 2, .stage = 3, .act = 2},
                    {.pp = 2, .stage = 1},
                    {.cp = 2, .stage = 3},
                    {.cp = 2, .bf16 = true, .comm = "a2a"}});
}

// Mixtures of experts: the routing's host side (copies of the routing, the rows per expert and
// the combine's slots and weights between host and device) under every state policy.
TEST(StagingBackend, MixturesOfExpertsGiveTheCpuBits) {
  expect_same_bits({{.stage = 1, .moe = true},
                    {.tp = 2, .stage = 3, .act = 3, .bf16 = true, .moe = true},
                    {.pp = 2, .stage = 1, .bf16 = true, .moe = true}});
}

TEST(StagingBackend, OffloadedStatesGiveTheCpuBits) {
  expect_same_bits({{.stage = 2, .optimizer = "cpu"},
                    {.stage = 3, .bf16 = true, .optimizer = "cpu", .param = "cpu"},
                    {.tp = 2, .stage = 1, .optimizer = "cpu"}});
}

}  // namespace
}  // namespace zt
