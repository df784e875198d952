// ZeRO-R activation memory on every rank count CTest runs: activation checkpointing, Pa
// (partitioned over tp) and Pa+cpu give the losses of the run without checkpointing under every
// ZeRO stage, and the checkpoint bytes per rank are the formula
//   layers / span · micro_batch · seq · hidden · 4 bytes, / tp with Pa; 0 on the device with cpu.
#include <gtest/gtest.h>

#include <vector>

#include "src/comm/topology.h"
#include "src/core/slab_allocator.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/dist/train_testing.h"

namespace zt {
namespace {

TrainOptions small(int stage, int tp) {
  TrainOptions o = test::small_gpt(0.1, 6);
  o.num_layers = 4;
  o.micro_batch_size = 2;
  o.global_batch_size = 4 * dist::world().size() / tp;
  o.log_interval = 100;
  o.zero_stage = stage;
  o.tensor_model_parallel_size = tp;
  o.reduce_bucket_size = 4000;
  o.overlap_comm = true;
  return o;
}

std::vector<StepMetrics> train(const TrainOptions& o) {
  return dist::train_run(o).steps;
}

TEST(ZeroR, CheckpointingPaAndCpuKeepTheLossesUnderEveryStage) {
  const int world = dist::world().size();
  for (int tp : {1, 2, 4}) {
    if (world % tp != 0) continue;
    for (int stage = 0; stage <= 3; ++stage) {
      const TrainOptions base = small(stage, tp);
      const auto ref = train(base);
      uint64_t ckpt_tp_bytes = 0;
      struct Variant {
        const char* name;
        int span;
        bool pa, cpu;
      };
      for (const Variant v :
           {Variant{"ckpt", 1, false, false}, Variant{"ckpt span 3", 3, false, false},
            Variant{"Pa", 1, true, false}, Variant{"Pa+cpu", 2, true, true}}) {
        TrainOptions o = base;
        o.checkpoint_activations = true;
        o.checkpoint_num_layers = v.span;
        o.partition_activations = v.pa;
        o.cpu_checkpointing = v.cpu;
        const auto got = train(o);
        // Recompute replays the same kernels on the same inputs with the same dropout masks.
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_EQ(got[i].lm_loss, ref[i].lm_loss)
              << v.name << " tp " << tp << " stage " << stage << " step " << i + 1;
        const size_t spans = static_cast<size_t>((o.num_layers + v.span - 1) / v.span);
        const size_t expect =
            spans * static_cast<size_t>(o.micro_batch_size * o.seq_length * o.hidden_size) * 4 /
            static_cast<size_t>(v.pa ? tp : 1);
        const StepMetrics& m = got.back();
        EXPECT_EQ(test::peak_bytes(m, MemCategory::Checkpoints), v.cpu ? 0u : expect) << v.name;
        EXPECT_EQ(test::peak_bytes(m, MemCategory::HostCheckpoints), v.cpu ? expect : 0u) << v.name;
        // span + 1 workspaces replace num_layers of them.
        if (v.span + 1 < o.num_layers) {
          EXPECT_LT(test::peak_bytes(m, MemCategory::Activations),
                    test::peak_bytes(ref.back(), MemCategory::Activations))
              << v.name;
        }
        if (v.span == 1 && !v.pa) ckpt_tp_bytes = m.comm_bytes_tp;
        // Pa adds, per span and micro-batch, one all-gather of the span input (N·C elements of
        // output) on the tp group.
        if (v.pa && v.span == 1 && tp > 1) {
          const int accumulation = o.global_batch_size / (o.micro_batch_size * world / tp);
          EXPECT_EQ(m.comm_bytes_tp - ckpt_tp_bytes,
                    static_cast<uint64_t>(accumulation) * spans *
                        static_cast<uint64_t>(o.micro_batch_size * o.seq_length * o.hidden_size) *
                        4)
              << "tp " << tp << " stage " << stage;
        }
      }
    }
  }
}

// ZeRO-R's MD: everything long-lived (model states, checkpoints, workspaces, buckets) is carved
// at start-up from arenas sized from the plan, so in a fixed device memory the free space stays
// one piece through training: fragmentation (largest free block / free bytes) is exactly 1.0
// after every step, under every stage, with and without checkpointing.
TEST(ZeroR, DeviceMemoryStaysUnfragmentedThroughTraining) {
  const int world = dist::world().size();
  const int tp = world % 2 == 0 ? 2 : 1;
  for (int stage = 0; stage <= 3; ++stage) {
    for (bool ckpt : {false, true}) {
      TrainOptions o = small(stage, tp);
      o.bf16 = true;
      o.checkpoint_activations = ckpt;
      o.partition_activations = ckpt;
      MemoryPool device(std::make_unique<SlabAllocator>(size_t{64} << 20));
      auto comm_world = dist::runtime().world(device);  // staging from the same memory
      {
        comm::Topology topo(*comm_world, tp);
        Trainer t(o, device, topo);
        for (const auto& m : t.run(false))
          EXPECT_EQ(m.memory_fragmentation, 1.0)
              << "stage " << stage << (ckpt ? " checkpointed" : "") << " step " << m.iteration;
      }
    }
  }
}

}  // namespace
}  // namespace zt
