// The planner's per-stage numbers under pipeline parallelism, in one process: the stages'
// layouts partition the model plus the last stage's copy of the word embedding; the first stage
// holds the most activations (the most micro-batches in flight); the pipeline bytes follow the
// schedule's sends and receives; the tensor-parallel bytes of the stages add up to those of the
// whole model; train's check plans each stage; the simulated bubble is 1F1B's and falls with
// interleaving. (tests/dist/planner_test.cpp checks each stage against real runs.)
#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "src/core/error.h"
#include "src/planner/cluster.h"
#include "src/planner/step_model.h"
#include "src/planner/train_plan.h"

namespace zt {
namespace {

PlanInput small(int tp, int dp, int pp, int micro_batches) {
  PlanInput in;
  in.model.num_layers = 8;
  in.model.hidden = 256;
  in.model.heads = 8;
  in.model.seq_length = 128;
  in.model.vocab_size = 1000;
  in.model.padded_vocab_size = padded_vocab_size(1000, 128, tp);
  in.tp = tp;
  in.dp = dp;
  in.pp = pp;
  in.working = DType::BF16;
  in.micro_batch = 2;
  in.accumulation = micro_batches;
  in.reduce_bucket_elems = 100'000;
  return in;
}

// This tp rank's rows of the word embedding: what the last stage holds a second copy of.
int64_t word_shard(const PlanInput& in) {
  return int64_t{in.model.padded_vocab_size} / in.tp * in.model.hidden;
}

TEST(PipelinePlan, StagesHoldTheModelAndTheLastAHeadCopy) {
  for (int tp : {1, 2}) {
    PlanInput in = small(tp, 2, 4, 8);
    const std::vector<MemoryPlan> stages = plan_stages(in);
    ASSERT_EQ(stages.size(), 4u);
    in.pp = 1;
    const MemoryPlan whole = plan_memory(in);
    int64_t sum = 0;
    for (const MemoryPlan& p : stages) {
      sum += p.rank_parameters;
      EXPECT_EQ(p.num_parameters, whole.num_parameters);
    }
    EXPECT_EQ(sum, whole.rank_parameters + word_shard(in)) << "tp " << tp;
    // The middle stages hold layers only, the same number each.
    EXPECT_EQ(stages[1].rank_parameters, stages[2].rank_parameters);
    EXPECT_GT(stages[0].rank_parameters, stages[1].rank_parameters);  // + the embedding
    EXPECT_GT(stages[3].rank_parameters, stages[1].rank_parameters);  // + final_ln and the copy
    // ZeRO stage 0 keeps the whole stage in each category: the model states follow the layout.
    for (const MemoryPlan& p : stages)
      EXPECT_EQ(p.params, static_cast<size_t>(p.rank_parameters) * 2);
  }
}

TEST(PipelinePlan, TheFirstStageHoldsTheMostActivations) {
  for (bool ckpt : {false, true}) {
    PlanInput in = small(2, 1, 4, 8);
    in.zero_stage = 1;
    in.checkpoint_activations = ckpt;
    const std::vector<MemoryPlan> stages = plan_stages(in);
    // 1F1B keeps P - s micro-batches in flight on stage s: a stage before the last keeps one
    // more than the next (the last adds the head's logits, but keeps a single micro-batch).
    for (size_t s = 0; s + 2 < stages.size(); ++s) {
      EXPECT_GT(stages[s].activations + stages[s].checkpoints,
                stages[s + 1].activations + stages[s + 1].checkpoints)
          << "stage " << s << (ckpt ? " ckpt" : "");
      if (ckpt) {
        EXPECT_GT(stages[s].checkpoints, stages[s + 1].checkpoints);
      }
    }
    for (const MemoryPlan& p : stages)
      EXPECT_GE(stages[0].activations + stages[0].checkpoints, p.activations + p.checkpoints);
    // Checkpointed: one [N, C] input per layer of a chunk and micro-batch in flight (span 1),
    // but the first layer's, which is the kept chunk input itself.
    if (ckpt) {
      const size_t input = size_t{2} * 128 * 256 * 2;  // [B·T, C] bf16
      for (size_t s = 0; s < stages.size(); ++s)
        EXPECT_EQ(stages[s].checkpoints, input * (2 - 1) * (4 - s)) << "stage " << s;
    }
  }
}

TEST(PipelinePlan, PipelineBytesAreTheSchedulesMessages) {
  for (bool sp : {false, true})
    for (int chunks : {1, 2}) {
      PlanInput in = small(2, 2, 4, 8);
      in.model.sequence_parallel = sp;
      in.chunks = chunks;
      const uint64_t rows = sp ? 2 * 128 / 2 : 2 * 128;                     // Nl: this rank's rows
      const uint64_t message = rows * 256 * 2;                              // [Nl, C] bf16
      const uint64_t tied = 2 * static_cast<uint64_t>(word_shard(in)) * 2;  // all-reduce: 2n
      const std::vector<MemoryPlan> stages = plan_stages(in);
      for (size_t s = 0; s < stages.size(); ++s) {
        const bool end = s == 0 || s == stages.size() - 1;
        // Per micro-batch and chunk: forward receive and send, backward receive and send, but
        // for the model's first and last virtual stage (one chunk of the first and last stage).
        const uint64_t per_micro_batch = 4 * static_cast<uint64_t>(chunks) - (end ? 2 : 0);
        EXPECT_EQ(stages[s].pp_messages, 8 * per_micro_batch) << s;
        EXPECT_EQ(stages[s].comm_pp, 8 * per_micro_batch * message + (end ? tied : 0))
            << "stage " << s << (sp ? " sp" : "") << " chunks " << chunks;
        EXPECT_EQ(stages[s].tied_bytes, end ? tied : 0);
      }
      in.pp = 1;
      in.chunks = 1;
      EXPECT_EQ(plan_memory(in).comm_pp, 0u);
    }
}

TEST(PipelinePlan, StagesSplitTheTensorAndDataParallelTraffic) {
  struct Policy {
    bool sp, ckpt, pa;
  };
  for (const Policy& k :
       {Policy{false, false, false}, Policy{true, false, false}, Policy{false, true, false},
        Policy{false, true, true}, Policy{true, true, false}}) {
    PlanInput in = small(2, 2, 4, 8);
    in.model.sequence_parallel = k.sp;
    in.checkpoint_activations = k.ckpt;
    in.partition_activations = k.pa;
    const std::vector<MemoryPlan> stages = plan_stages(in);
    uint64_t tp = 0, tp_calls = 0, dp = 0;
    for (const MemoryPlan& p : stages) {
      tp += p.comm_tp;
      tp_calls += p.tp_collectives;
      dp += p.comm_dp;
    }
    in.pp = 1;
    const MemoryPlan whole = plan_memory(in);
    const std::string what =
        std::string(k.sp ? "sp " : "") + (k.ckpt ? "ckpt " : "") + (k.pa ? "Pa" : "");
    // Pa: a stage's first span starts from the chunk input it keeps whole, so each stage
    // all-gathers one span input fewer per micro-batch than the whole model (whose first layer
    // input, the embedding's output, is not kept).
    const uint64_t kept = k.pa ? uint64_t{4} * 8 : 0;  // stages x micro-batches
    EXPECT_EQ(tp + kept * 2 * 128 * 256 * 2, whole.comm_tp) << what;
    EXPECT_EQ(tp_calls + kept, whole.tp_collectives) << what;
    // ZeRO stage 0 all-reduces every gradient element (2n): the head copy's too.
    EXPECT_EQ(dp, whole.comm_dp + 2 * static_cast<uint64_t>(word_shard(in)) * 2) << what;
  }
}

TEST(PipelinePlan, TrainChecksEveryStageOnItsOwn) {
  TrainOptions o;
  o.mock_data = true;
  o.vocab_size = 1000;
  o.num_layers = 8;
  o.hidden_size = 256;
  o.num_attention_heads = 8;
  o.seq_length = 128;
  o.bf16 = true;
  o.micro_batch_size = 2;
  o.global_batch_size = 16;
  o.pipeline_model_parallel_size = 4;
  const PlanInput in = plan_input_from(o, 1);
  EXPECT_EQ(in.pp, 4);
  EXPECT_EQ(in.accumulation, 8);
  const std::vector<MemoryPlan> stages = plan_stages(in);
  const size_t worst = largest_stage(stages);
  const double needs = static_cast<double>(stages[worst].device_total());
  MemoryBudget b;
  b.source = "test budget";
  b.bytes = needs;
  EXPECT_NO_THROW(check_plan_fits(o, 1, b));
  // The same model on one stage does not fit what its largest stage needs.
  TrainOptions one = o;
  one.pipeline_model_parallel_size = 1;
  EXPECT_THROW(check_plan_fits(one, 1, b), InputError);
  b.bytes = needs - 1;
  try {
    check_plan_fits(o, 1, b);
    ADD_FAILURE() << "fits one byte short";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("per rank on pipeline stage " + std::to_string(worst) + " of 4"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("at least"), std::string::npos) << what;
  }
}

TEST(PipelineStepModel, TheBubbleIsTheSchedulesAndFallsWithInterleaving) {
  ClusterSpec c = cluster_preset("dgx-a100");
  c.intra_node_latency_us = c.inter_node_latency_us = 0;
  PlanInput in = small(1, 1, 4, 8);
  in.model.num_layers = 16;
  in.zero_stage = 1;
  const StepEstimate plain = simulate_step(in, c);
  // 1F1B: (P-1)/(m+P-1) with uniform stages and free hand-overs; the hand-overs (and the last
  // stage's head, timed for every stage) only add to it.
  const double ideal = 3.0 / (8 + 3);
  EXPECT_GE(plain.bubble_fraction, ideal - 1e-9);
  EXPECT_LT(plain.bubble_fraction, ideal + 0.05);
  EXPECT_GT(plain.p2p_ms, 0);
  EXPECT_GT(plain.tied_ms, 0);
  EXPECT_GE(plain.step_ms, plain.pipeline_ms + plain.tied_ms + plain.optimizer_ms);
  in.chunks = 2;
  const StepEstimate interleaved = simulate_step(in, c);
  EXPECT_LT(interleaved.bubble_fraction, plain.bubble_fraction);
  EXPECT_LT(interleaved.pipeline_ms, plain.pipeline_ms);
  // Without a pipeline: no bubble, no pipeline terms.
  in.pp = 1;
  in.chunks = 1;
  const StepEstimate none = simulate_step(in, c);
  EXPECT_EQ(none.bubble_fraction, 0);
  EXPECT_EQ(none.pipeline_ms, 0);
  EXPECT_EQ(none.stages.size(), 1u);
}

}  // namespace
}  // namespace zt
