// Tensor × data parallelism through the Trainer (zerotron train's code path): every tp that
// divides the world, with dp = world / tp, reproduces the single-rank run's losses and gradient
// norms over 20 steps (fp32, relative 1e-5), dropout on and off, gradient clipping on — which
// needs the global norm without double-counted replicated parameters — and the gathered final
// parameters match.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "src/comm/self_communicator.h"
#include "src/comm/topology.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/dist/tp_testing.h"
#include "tests/dist/train_testing.h"

namespace zt {
namespace {

TrainOptions small(double dropout) {
  TrainOptions o = test::small_gpt(dropout, 20);
  o.clip_grad = 0.5;  // binding for these gradients: the TP-aware norm matters
  return o;
}

class TrainTp : public ::testing::TestWithParam<double> {};

TEST_P(TrainTp, TensorTimesDataParallelMatchesOneRank) {
  TrainOptions o = small(GetParam());
  MemoryPool local(make_host_allocator());
  comm::SelfWorld self;
  Trainer alone(o, local, self.topology());
  const std::vector<StepMetrics> want = alone.run(false);
  const float* want_params = alone.optimizer().master_params().f32();
  for (int tp = 2; tp <= std::min(4, dist::world().size()); tp *= 2) {
    if (dist::world().size() % tp != 0) continue;
    o.tensor_model_parallel_size = tp;
    comm::Topology topo(dist::world(), tp);
    MemoryPool pool(make_host_allocator());
    Trainer t(o, pool, topo);
    const std::vector<StepMetrics> got = t.run(false);
    ASSERT_EQ(got.size(), want.size());
    const std::string where = "tp=" + std::to_string(tp) + " dp=" + std::to_string(topo.dp_size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i].lm_loss, want[i].lm_loss, 1e-5 * want[i].lm_loss)
          << where << " step " << i + 1;
      EXPECT_NEAR(got[i].grad_norm, want[i].grad_norm, 1e-5 * want[i].grad_norm)
          << where << " step " << i + 1;
    }
    const ParamLayout& layout = t.optimizer().layout();
    bool same = false;
    const auto full = dist::gather_full(&topo.tp(), t.model().config(), layout,
                                        t.optimizer().master_params().f32(), &same);
    EXPECT_TRUE(same) << where << ": replicated parameters differ across tp ranks";
    const ParamLayout& ref_layout = alone.optimizer().layout();
    for (size_t k = 0; k < full.size(); ++k) {
      const ParamSpec& s = ref_layout.params()[k];
      double diff = 0, ref = 0;
      for (int64_t i = 0; i < s.numel(); ++i) {
        diff = std::max(
            diff, std::abs(double{full[k][static_cast<size_t>(i)]} - want_params[s.offset + i]));
        ref = std::max(ref, std::abs(double{want_params[s.offset + i]}));
      }
      // Adam's amplification of zero-gradient rounding noise (tp_test.cpp): 1e-3·lr per step.
      EXPECT_LE(diff, 1e-5 * ref + 1e-3 * o.lr * o.train_iters) << where << " " << s.name;
    }
  }
}

// Sequence parallelism (Megatron-LM's --sequence-parallel) computes the same function: with
// dropout on and off, each tp with dp = world / tp and each activation policy reproduces the
// single-rank losses and gradient norms over 20 steps (fp32, relative 1e-5). The activations it
// splits (each layer's residuals and layernorm statistics, measured by MemoryPool) shrink by tp
// against the same layout without it.
TEST_P(TrainTp, SequenceParallelMatchesOneRank) {
  TrainOptions o = small(GetParam());
  MemoryPool local(make_host_allocator());
  comm::SelfWorld self;
  Trainer alone(o, local, self.topology());
  const std::vector<StepMetrics> want = alone.run(false);
  struct Policy {
    bool ckpt, pa;
  };
  for (int tp = 2; tp <= std::min(4, dist::world().size()); tp *= 2) {
    if (dist::world().size() % tp != 0) continue;
    for (const Policy policy : {Policy{false, false}, Policy{true, true}}) {
      o.tensor_model_parallel_size = tp;
      o.checkpoint_activations = policy.ckpt;
      o.partition_activations = policy.pa;
      comm::Topology topo(dist::world(), tp);
      size_t activations[2] = {0, 0};
      for (const bool sp : {false, true}) {
        o.sequence_parallel = sp;
        MemoryPool pool(make_host_allocator());
        Trainer t(o, pool, topo);
        const std::vector<StepMetrics> got = t.run(false);
        activations[sp] = got.back().memory_peak[static_cast<size_t>(MemCategory::Activations)];
        if (!sp) continue;
        ASSERT_EQ(got.size(), want.size());
        const std::string where = "tp=" + std::to_string(tp) + (policy.ckpt ? " ckpt+Pa" : "");
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_NEAR(got[i].lm_loss, want[i].lm_loss, 1e-5 * want[i].lm_loss)
              << where << " step " << i + 1;
          EXPECT_NEAR(got[i].grad_norm, want[i].grad_norm, 1e-5 * want[i].grad_norm)
              << where << " step " << i + 1;
        }
      }
      if (policy.ckpt) continue;
      // Per layer: 4 fp32 statistics of N and res2, out [N, h] in fp32 go from N to N/tp rows;
      // sequence parallelism adds one [2h] fp32 scratch for the layernorm gradients.
      const auto n = static_cast<size_t>(o.micro_batch_size * o.seq_length);
      const auto h = static_cast<size_t>(o.hidden_size);
      auto split = [&](size_t rows) {
        return 4 * Arena::aligned(rows * 4) + 2 * Arena::aligned(rows * h * 4);
      };
      const size_t saved = static_cast<size_t>(o.num_layers) * (split(n) - split(n / tp)) -
                           Arena::aligned(2 * h * 4);
      EXPECT_EQ(activations[0] - activations[1], saved) << "tp=" << tp;
    }
  }
}

// Sequence parallelism where a rank's rows cross samples (micro batch 3: rank 1 of tp 2 holds
// the end of sample 1 and all of sample 2) and every parameter is reached in small chunks (the
// position table in runs that straddle both): the same losses as one rank.
TEST_P(TrainTp, SequenceParallelAcrossSamplesAndChunks) {
  TrainOptions o = small(GetParam());
  o.micro_batch_size = 3;
  o.global_batch_size = 12;
  o.reduce_bucket_size = 100;
  o.train_iters = 8;
  MemoryPool local(make_host_allocator());
  comm::SelfWorld self;
  Trainer alone(o, local, self.topology());
  const std::vector<StepMetrics> want = alone.run(false);
  for (int tp = 2; tp <= std::min(4, dist::world().size()); tp *= 2) {
    if (dist::world().size() % tp != 0 || o.global_batch_size % (3 * dist::world().size() / tp))
      continue;
    o.tensor_model_parallel_size = tp;
    o.sequence_parallel = true;
    comm::Topology topo(dist::world(), tp);
    MemoryPool pool(make_host_allocator());
    Trainer t(o, pool, topo);
    const std::vector<StepMetrics> got = t.run(false);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i].lm_loss, want[i].lm_loss, 1e-5 * want[i].lm_loss)
          << "tp=" << tp << " step " << i + 1;
  }
}

INSTANTIATE_TEST_SUITE_P(Dropout, TrainTp, ::testing::Values(0.0, 0.1));

}  // namespace
}  // namespace zt
