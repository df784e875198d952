// The planner predicts what a real run measures: for several layouts, every MemoryPool category
// the plan covers and the dp/tp bytes per step from CommStats agree within 1% (they are computed
// by the same layout, partition and byte-count code, so in practice exactly).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "src/comm/topology.h"
#include "src/planner/memory_plan.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"

namespace zt {
namespace {

struct Case {
  int tp, stage;
  bool bf16, ckpt, pa, cpu;
  int accumulation;
};

void expect_close(double measured, double planned, const char* what, int i) {
  EXPECT_NEAR(measured, planned, 0.01 * planned + 0.5) << what << ", case " << i;
}

TEST(Planner, PredictsMeasuredMemoryAndCommunication) {
  const int world = dist::world().size();
  const Case cases[] = {{1, 0, false, false, false, false, 1}, {1, 1, true, false, false, false, 2},
                        {1, 2, true, true, false, false, 1},   {1, 3, true, false, false, false, 2},
                        {2, 3, true, true, true, false, 1},    {2, 2, false, true, true, true, 2},
                        {2, 0, true, false, false, false, 1}};
  for (int i = 0; i < static_cast<int>(std::size(cases)); ++i) {
    const Case& k = cases[i];
    if (world % k.tp != 0) continue;
    const int dp = world / k.tp;
    TrainOptions o;
    o.num_layers = 3;
    o.hidden_size = 32;
    o.num_attention_heads = 4;
    o.seq_length = 16;
    o.vocab_size = 50;
    o.make_vocab_size_divisible_by = 16;
    o.micro_batch_size = 2;
    o.global_batch_size = 2 * dp * k.accumulation;
    o.train_iters = 2;
    o.mock_data = true;
    o.zero_stage = k.stage;
    o.bf16 = k.bf16;
    o.tensor_model_parallel_size = k.tp;
    o.checkpoint_activations = k.ckpt;
    o.partition_activations = k.pa;
    o.cpu_checkpointing = k.cpu;
    o.reduce_bucket_size = 2000;
    o.param_persistence_threshold = 200;
    comm::Topology topo(dist::world(), k.tp);
    Trainer t(o, dist::pool(), &topo);
    const StepMetrics m = t.run(false).back();

    PlanInput in;
    in.model = t.config();
    in.tp = k.tp;
    in.dp = dp;
    in.zero_stage = k.stage;
    in.working = k.bf16 ? DType::BF16 : DType::F32;
    in.micro_batch = o.micro_batch_size;
    in.accumulation = k.accumulation;
    in.checkpoint_activations = k.ckpt;
    in.partition_activations = k.pa;
    in.cpu_checkpointing = k.cpu;
    in.reduce_bucket_elems = o.reduce_bucket_size;
    in.param_persistence_threshold = o.param_persistence_threshold;
    in.max_live_parameters = o.max_live_parameters;
    const MemoryPlan p = plan_memory(in);
    if (dist::world().rank() == 0)
      std::printf(
          "case %d tp %d dp %d stage %d %s%s: params %zu/%zu grads %zu/%zu optimizer "
          "%zu/%zu activations %zu/%zu checkpoints %zu/%zu host %zu/%zu buffers %zu/%zu dp bytes "
          "%llu/%llu tp bytes %llu/%llu (measured/planned)\n",
          i, k.tp, dp, k.stage, k.bf16 ? "bf16" : "fp32",
          k.ckpt ? (k.cpu ? " Pa+cpu" : (k.pa ? " Pa" : " ckpt")) : "", m.memory_peak[0], p.params,
          m.memory_peak[1], p.grads, m.memory_peak[2], p.optimizer, m.memory_peak[3], p.activations,
          m.memory_peak[4], p.checkpoints, m.memory_peak[5], p.host_checkpoints, m.memory_peak[6],
          p.buffers, static_cast<unsigned long long>(m.comm_bytes_dp),
          static_cast<unsigned long long>(p.comm_dp),
          static_cast<unsigned long long>(m.comm_bytes_tp),
          static_cast<unsigned long long>(p.comm_tp));
    auto cat = [&](MemCategory c) {
      return static_cast<double>(m.memory_peak[static_cast<size_t>(c)]);
    };
    expect_close(cat(MemCategory::Params), static_cast<double>(p.params), "params", i);
    expect_close(cat(MemCategory::Grads), static_cast<double>(p.grads), "grads", i);
    expect_close(cat(MemCategory::Optimizer), static_cast<double>(p.optimizer), "optimizer", i);
    expect_close(cat(MemCategory::Activations), static_cast<double>(p.activations), "activations",
                 i);
    expect_close(cat(MemCategory::Checkpoints), static_cast<double>(p.checkpoints), "checkpoints",
                 i);
    expect_close(cat(MemCategory::HostCheckpoints), static_cast<double>(p.host_checkpoints),
                 "host checkpoints", i);
    expect_close(cat(MemCategory::Buffers), static_cast<double>(p.buffers), "buffers", i);
    expect_close(static_cast<double>(m.comm_bytes_dp), static_cast<double>(p.comm_dp), "dp bytes",
                 i);
    expect_close(static_cast<double>(m.comm_bytes_tp), static_cast<double>(p.comm_tp), "tp bytes",
                 i);
  }
}

}  // namespace
}  // namespace zt
