// Context parallelism (src/model/context_split.h; attention by the ring, context_ring.h, and by the
// all-to-all, context_attention.h, each layout in both) keeps the layout invariant
// (docs/design/architecture.md, Invariants, 1): every sample split over cp ranks, alone and with
// tp (with and without sequence parallelism), dp with ZeRO 1 and 3, pp and the activation
// policies, gives the one-rank run's losses and gradient norms (fp32, relative 1e-5 per step over
// 10 steps), dropout off and on (each token keeps its counters), for GPT-2's shape (learned
// positions) and Llama's (rotary positions, grouped-query attention); bf16 within the bands of
// half_layouts_test.cpp. A checkpoint saved at cp 2 loads at one rank with the same parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "src/data/mock_data.h"
#include "src/planner/memory_plan.h"
#include "src/planner/train_plan.h"
#include "tests/dist/train_testing.h"

namespace zt {
namespace {
namespace fs = std::filesystem;

struct Layout {
  int cp = 1, tp = 1, pp = 1, stage = 0;
  bool sp = false;
  int act = 0;               // 0 kept, 1 checkpointed, 2 Pa, 3 Pa+cpu
  int chunks = 1;            // model chunks per pipeline stage (> 1: the interleaved schedule)
  std::string comm = "p2p";  // --cp-comm-type
};

// Each layout with the ring and with the all-to-all.
std::vector<Layout> both_comms(const std::vector<Layout>& layouts) {
  std::vector<Layout> out;
  for (Layout l : layouts)
    for (const char* c : {"p2p", "a2a"}) {
      l.comm = c;
      out.push_back(l);
    }
  return out;
}

std::string name(const Layout& l) {
  static const char* acts[] = {"", " ckpt", " Pa", " Pa+cpu"};
  return fmt::format("cp {} {} tp {} pp {}{} dp {} stage {}{}{}", l.cp, l.comm, l.tp, l.pp,
                     l.chunks > 1 ? " interleaved" : "",
                     dist::world().size() / (l.cp * l.tp * l.pp), l.stage, l.sp ? " sp" : "",
                     acts[l.act]);
}

TrainOptions with(TrainOptions o, const Layout& l) {
  o.context_parallel_size = l.cp;
  o.cp_comm_type = l.comm;
  o.tensor_model_parallel_size = l.tp;
  test::set_pipeline(o, l.pp, l.chunks);
  o.zero_stage = l.stage;
  o.sequence_parallel = l.sp;
  o.checkpoint_activations = l.act >= 1;
  o.partition_activations = l.act >= 2;
  o.cpu_checkpointing = l.act == 3;
  return o;
}

std::vector<StepMetrics> run(const TrainOptions& o, const Layout& l) {
  comm::Topology topo(dist::world(), l.tp, l.pp, nullptr, l.cp);
  Trainer t(with(o, l), dist::pool(), topo);
  return t.run(false);
}

using dist::expect_close;
using dist::rel;

// GPT-2's shape: 4 heads, 32 tokens (cp 4: 8 chunks of 4), two samples per micro-batch.
TrainOptions small(double dropout) {
  TrainOptions o = test::small_gpt(dropout, 10);
  o.seq_length = 32;
  o.micro_batch_size = 2;
  return o;
}

// Llama's shape: 8 heads in 4 key/value groups (cp 2 x tp 2: one group per rank).
TrainOptions small_llama(double dropout) {
  TrainOptions o = small(dropout);
  o.num_attention_heads = 8;
  test::set_llama_shape(o, 4);
  return o;
}

bool fits(const Layout& l) {
  const int world = dist::world().size(), mp = l.cp * l.tp * l.pp;
  return l.cp <= world && world % mp == 0;
}

void expect_layouts(const TrainOptions& o, const std::vector<Layout>& layouts) {
  const std::vector<StepMetrics> want = dist::train_run(o, false).steps;
  for (const Layout& l : both_comms(layouts))
    if (fits(l)) expect_close(run(o, l), want, 1e-5, 1e-5, name(l));
}

TEST(ContextParallel, GptMatchesOneRankWithAndWithoutDropout) {
  for (double dropout : {0.0, 0.1})
    expect_layouts(small(dropout), {{2}, {4}, {2, 1, 1, 1}, {2, 1, 1, 3}, {2, 2, 1, 0, true}});
}

TEST(ContextParallel, LlamaMatchesOneRankWithAndWithoutDropout) {
  for (double dropout : {0.0, 0.1})
    expect_layouts(small_llama(dropout), {{2}, {4}, {2, 1, 1, 3}, {2, 2}, {2, 2, 1, 0, true}});
}

// Fewer key/value heads than context ranks: 2 groups at cp 4, and one per tensor-parallel rank at
// cp 2 x tp 2 — under the all-to-all the context ranks reading one key/value head each receive it
// and their gradients of it are summed (the ring passes every rank its heads whatever the count).
TEST(ContextParallel, SharedKeyValueHeadsMatchOneRank) {
  for (double dropout : {0.0, 0.1}) {
    TrainOptions o = small_llama(dropout);
    o.num_query_groups = 2;
    expect_layouts(o, {{4}, {4, 1, 1, 3}, {2, 2}, {2, 2, 1, 1, true}});
  }
}

TEST(ContextParallel, PipelineAndActivationPoliciesMatchOneRank) {
  TrainOptions o = small_llama(0.1);
  o.num_layers = 4;  // 2 chunks of one layer per stage under the interleaved schedule
  expect_layouts(o, {{2, 1, 2, 1},
                     {2, 1, 2, 0, false, 0, 2},
                     {2, 1, 1, 3, false, 1},
                     {2, 2, 1, 3, false, 2},
                     {2, 2, 1, 0, true, 3}});
}

TEST(ContextParallel, HalfPrecisionWithinTolerance) {
  for (const bool bf16 : {true, false}) {
    TrainOptions o = small_llama(0.0);
    o.bf16 = bf16;
    o.fp16 = !bf16;
    const double tol = bf16 ? 5e-4 : 2e-4;
    const std::vector<StepMetrics> want = dist::train_run(o, false).steps;
    double worst = 0;
    for (const Layout& l : both_comms({Layout{2}, Layout{4}, Layout{2, 1, 1, 3}}))
      if (fits(l)) worst = std::max(worst, expect_close(run(o, l), want, tol, 0, name(l)));
    if (dist::world().rank() == 0)
      std::printf("context parallel %s, %d rank(s): largest loss deviation from one rank %.3g\n",
                  bf16 ? "bf16" : "fp16", dist::world().size(), worst);
  }
}

// Evaluation runs the same split: the validation loss after training at cp 2 (and cp 2 x dp) is
// one rank's.
// (Mock data has no validation stream: a second one, of another seed, stands in.)
TrainData with_validation(const TrainOptions& o) {
  const auto seed = static_cast<uint64_t>(o.seed);
  return {std::make_shared<MockData>(seed, o.seq_length, o.vocab_size),
          std::make_shared<MockData>(seed + 1, o.seq_length, o.vocab_size), nullptr};
}

TEST(ContextParallel, EvaluationMatchesOneRank) {
  TrainOptions o = small_llama(0.1);
  o.eval_iters = 3;
  MemoryPool local(make_host_allocator());
  comm::SelfWorld self;
  Trainer alone(o, local, self.topology(), with_validation(o));
  alone.run(false);
  const double want = alone.evaluate();
  for (const Layout& l : both_comms({Layout{2}, Layout{2, 1, 1, 3}})) {
    if (!fits(l)) continue;
    comm::Topology topo(dist::world(), l.tp, l.pp, nullptr, l.cp);
    Trainer t(with(o, l), dist::pool(), topo, with_validation(o));
    t.run(false);
    EXPECT_LE(rel(t.evaluate(), want), 1e-5) << name(l);
  }
}

// The all-to-all's traffic per step is what context_attention.h states, counted on the cp group:
// per layer and micro-batch N·(3h + h) elements forward and N·(h + h + 3h) backward.
TEST(ContextParallel, AllToAllBytesAreTheStatedOnes) {
  Layout l{2};
  l.comm = "a2a";
  if (!fits(l)) GTEST_SKIP();
  TrainOptions o = with(small(0.0), l);
  o.train_iters = 1;
  comm::Topology topo(dist::world(), 1, 1, nullptr, 2);
  Trainer t(o, dist::pool(), topo);
  const comm::CommSnapshot before = topo.stats().snapshot();
  t.run(false);
  const comm::CommSnapshot d = topo.stats().snapshot() - before;
  const comm::OpCounters a2a = d.at(comm::GroupKind::Cp, comm::CommOp::AllToAll);
  const int64_t N = int64_t{o.micro_batch_size} * o.seq_length / l.cp, h = o.hidden_size;
  const int64_t micro = o.global_batch_size / o.micro_batch_size / (dist::world().size() / l.cp);
  // Forward: q|k|v (3h) and the output (h); backward: the output, its gradient and the q|k|v
  // gradient (5h); each an all-to-all of N rows.
  const int64_t per_layer = N * (3 * h + h) + N * (h + h + 3 * h);
  EXPECT_EQ(a2a.elements, static_cast<uint64_t>(per_layer * o.num_layers * micro));
  EXPECT_EQ(a2a.bytes, a2a.elements / 2 * 4) << "(cp-1)/cp of fp32 elements leave the rank";
}

// The ring's traffic per step is what context_ring.h states, counted on the cp group as sends
// and receives: per layer and micro-batch C−1 hops of the keys and values [N, 2h] forward,
// backward C−1 of them and C of their gradients (fp32 at every precision), at cp 2 and cp 4, bf16.
TEST(ContextParallel, RingBytesAreTheStatedOnes) {
  for (const int cp : {2, 4}) {
    const Layout l{cp};
    if (!fits(l)) continue;
    TrainOptions o = with(small(0.0), l);
    o.bf16 = true;
    o.train_iters = 1;
    comm::Topology topo(dist::world(), 1, 1, nullptr, cp);
    Trainer t(o, dist::pool(), topo);
    const comm::CommSnapshot before = topo.stats().snapshot();
    t.run(false);
    const comm::CommSnapshot d = topo.stats().snapshot() - before;
    const comm::OpCounters sent = d.at(comm::GroupKind::Cp, comm::CommOp::Send);
    const comm::OpCounters received = d.at(comm::GroupKind::Cp, comm::CommOp::Recv);
    const int64_t N = int64_t{o.micro_batch_size} * o.seq_length / cp, kv = N * 2 * o.hidden_size;
    const int64_t micro = o.global_batch_size / o.micro_batch_size / (dist::world().size() / cp);
    const int64_t hops = int64_t{o.num_layers} * micro;
    EXPECT_EQ(sent.calls, static_cast<uint64_t>(hops * (3 * cp - 2))) << "cp " << cp;
    EXPECT_EQ(sent.bytes, static_cast<uint64_t>(hops * (2 * (cp - 1) * kv * 2 + cp * kv * 4)))
        << "cp " << cp;
    EXPECT_EQ(received.bytes, sent.bytes) << "cp " << cp;
    EXPECT_EQ(d.at(comm::GroupKind::Cp, comm::CommOp::AllToAll).calls, 0u) << "cp " << cp;
  }
}

// At 4096 tokens a sample's activations (kept, per rank: the metrics' peak) at cp 4 are at most
// 0.3 of one rank's, and each equals its plan, in both comm types. (Under the all-to-all the CPU
// attention's per-thread scratch is for whole sequences at every cp: context_attention.h; hidden
// 128 keeps it a small part.)
TEST(ContextParallel, ActivationsShrinkWithTheContextSize) {
  if (dist::world().size() != 4) GTEST_SKIP() << "cp 4 against dp 4 needs 4 ranks";
  TrainOptions o = small_llama(0.0);
  o.hidden_size = 128;
  o.seq_length = 4096;
  o.micro_batch_size = 1;
  o.global_batch_size = 4;
  o.train_iters = 1;
  for (const char* comm : {"p2p", "a2a"}) {
    size_t bytes[2] = {};
    for (int i = 0; i < 2; ++i) {
      Layout l{i == 0 ? 1 : 4};
      l.comm = comm;
      const TrainOptions run_o = with(o, l);
      comm::Topology topo(dist::world(), 1, 1, nullptr, l.cp);
      Trainer t(run_o, dist::pool(), topo);
      const StepMetrics m = t.run(false).back();
      bytes[i] = test::peak_bytes(m, MemCategory::Activations);
      const int dp = dist::world().size() / l.cp;
      EXPECT_EQ(bytes[i], plan_memory(plan_input_from(run_o, dp)).activations) << name(l);
    }
    if (dist::world().rank() == 0)
      std::printf("activations per rank at 4096 tokens: cp 1 %zu bytes, cp 4 %s %zu bytes (%.3f)\n",
                  bytes[0], comm, bytes[1],
                  static_cast<double>(bytes[1]) / static_cast<double>(bytes[0]));
    EXPECT_LE(static_cast<double>(bytes[1]), 0.3 * static_cast<double>(bytes[0])) << comm;
  }
}

// Parameters are replicated over the context ranks and ZeRO's shards follow the data x context
// group: a checkpoint saved at cp 2 x ZeRO 3 after 3 of 6 steps resumes there bitwise, loads at
// cp 4 (or at dp x ZeRO 1 with cp 1 on the whole world) and at one rank with the saved full
// parameters bitwise, each going on with the uninterrupted run's losses (one rank's, 1e-5).
TEST(ContextParallel, CheckpointDoesNotDependOnTheContextSize) {
  const Layout saved{2, 1, 1, 3};
  if (!fits(saved)) GTEST_SKIP();
  TrainOptions six = small_llama(0.1);
  six.train_iters = 6;
  six.lr_decay_iters = 6;
  const std::vector<StepMetrics> want = dist::train_run(six, false).steps;
  const std::string dir =
      dist::scratch_dir() + "zt_cp_ckpt_" + std::to_string(dist::world().size());
  if (dist::world().rank() == 0) fs::remove_all(dir);
  dist::world().barrier();
  std::vector<double> full;
  std::vector<float> master;
  {
    comm::Topology topo(dist::world(), 1, 1, nullptr, 2);
    Trainer t(with(six, saved), dist::pool(), topo);
    full = test::lm_losses(t.run(false));
  }
  {
    TrainOptions o = with(six, saved);
    o.train_iters = 3;
    o.save = dir;
    comm::Topology topo(dist::world(), 1, 1, nullptr, 2);
    Trainer t(o, dist::pool(), topo);
    t.run(false);
    master.resize(static_cast<size_t>(t.optimizer().layout().numel()));
    t.optimizer().gather_master(master.data());
  }
  {
    comm::Topology topo(dist::world(), 1, 1, nullptr, 2);
    Trainer t(with(six, saved), dist::pool(), topo);
    EXPECT_EQ(t.load_checkpoint(dir), 3);
    const auto rest = test::lm_losses(t.run(false));
    ASSERT_EQ(rest.size(), 3u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(rest[i], full[3 + i]) << "resume step " << 4 + i;
  }
  for (const Layout& l : {Layout{4, 1, 1, 3}, Layout{1, 1, 1, 1}}) {
    if (!fits(l)) continue;
    comm::Topology topo(dist::world(), l.tp, l.pp, nullptr, l.cp);
    Trainer t(with(six, l), dist::pool(), topo);
    EXPECT_EQ(t.load_checkpoint(dir), 3) << name(l);
    std::vector<float> loaded(master.size());
    t.optimizer().gather_master(loaded.data());
    EXPECT_EQ(loaded, master) << name(l);
    const auto rest = t.run(false);
    ASSERT_EQ(rest.size(), 3u);
    for (size_t i = 0; i < 3; ++i)
      EXPECT_NEAR(rest[i].lm_loss, want[3 + i].lm_loss, 1e-5 * want[3 + i].lm_loss)
          << name(l) << " step " << 4 + i;
  }
  MemoryPool local(make_host_allocator());
  comm::SelfWorld self;
  Trainer t(six, local, self.topology());
  EXPECT_EQ(t.load_checkpoint(dir), 3);
  const float* m = t.optimizer().master_params().f32();
  EXPECT_TRUE(std::equal(master.begin(), master.end(), m)) << "one rank";
}

}  // namespace
}  // namespace zt
