// train's up-front memory check (src/planner/train_plan.h): absurd shapes are refused from
// bounds that need no layout, at once, naming the largest category; a layout that fits passes.
// The bound's parameter count is the layout's, for GPT-2's and Llama's shapes alike.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <tuple>

#include "src/core/error.h"
#include "src/model/param_layout.h"
#include "src/planner/train_plan.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

TrainOptions small() {
  TrainOptions o;
  o.mock_data = true;
  o.vocab_size = 64;
  o.num_layers = 1;
  o.hidden_size = 32;
  o.num_attention_heads = 4;
  o.seq_length = 8;
  return o;
}

std::string refusal(const TrainOptions& o, double budget_bytes, double* seconds) {
  MemoryBudget b;
  b.bytes = budget_bytes;
  b.source = "test budget";
  const auto t0 = std::chrono::steady_clock::now();
  std::string what;
  try {
    check_plan_fits(o, 1, b);
  } catch (const InputError& e) {
    what = e.what();
  }
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return what;
}

TEST(TrainPlan, AbsurdShapesAreRefusedAtOnce) {
  double s = 0;
  TrainOptions o = small();
  o.seq_length = 1000000;  // (attention keeps nothing of size T x T: 1.2 GB at least)
  std::string e = refusal(o, 1e9, &s);
  EXPECT_NE(e.find("the largest part activations"), std::string::npos) << e;
  EXPECT_LT(s, 0.05);
  o = small();
  o.num_layers = 10000000;
  e = refusal(o, 24e9, &s);
  EXPECT_NE(e.find("the largest part model states"), std::string::npos) << e;
  EXPECT_LT(s, 0.05);  // without building a layout of ten million layers
}

TEST(TrainPlan, TheLowerBoundCountsTheLastStagesLayoutExactly) {
  TrainOptions gpt = small();
  gpt.num_layers = 12;
  gpt.hidden_size = 64;
  TrainOptions llama = gpt;
  test::set_llama_shape(llama, 2);
  for (TrainOptions o : {gpt, llama})
    for (const auto& [tp, pp, chunks] : {std::tuple{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {2, 3, 2}}) {
      o.tensor_model_parallel_size = tp;
      o.pipeline_model_parallel_size = pp;
      o.num_layers_per_virtual_pipeline_stage = chunks > 1 ? 2 : 0;
      const PlanInput in = plan_input_from(o, 1);
      ASSERT_EQ(in.chunks, chunks);
      const PipelinePart last{in.pp, in.pp - 1, in.chunks};
      EXPECT_EQ(last_stage_params(in),
                static_cast<double>(ParamLayout::gpt(in.model, tp, 0, last).numel()))
          << (o.swiglu ? "llama" : "gpt") << " tp " << tp << " pp " << pp << " chunks " << chunks;
    }
}

TEST(TrainPlan, TheExactPlanNamesItsLargestCategory) {
  double s = 0;
  TrainOptions o = small();
  EXPECT_EQ(refusal(o, 1e9, &s), "");  // a 1-layer toy fits a gigabyte
  o.hidden_size = 1024;
  o.num_attention_heads = 16;
  o.vocab_size = 50257;
  o.seq_length = 1024;
  o.micro_batch_size = 8;
  // Passes the lower bounds (3.0 GB), fails on the whole plan (4.7 GB, activations 3.7 GB).
  const std::string e = refusal(o, 3.5e9, &s);
  EXPECT_NE(e.find("does not fit: it needs "), std::string::npos) << e;
  EXPECT_EQ(e.find("at least"), std::string::npos) << e;
  EXPECT_NE(e.find("the largest part activations"), std::string::npos) << e;
  EXPECT_NE(e.find("test budget"), std::string::npos) << e;
}

}  // namespace
}  // namespace zt
