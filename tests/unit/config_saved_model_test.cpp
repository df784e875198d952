// A run that loads a checkpoint takes its model from it: every model option not given is the
// checkpoint's, and given flags the load cannot take are refused in one line naming them all.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/config/derive.h"
#include "src/config/saved_model.h"
#include "src/core/error.h"
#include "tests/support/tiny_gpt.h"

namespace zt {
namespace {

// A Llama-shaped model as an import records it (test::tiny_llama in tests/support/tiny_gpt.h: rope,
// RMSNorm, SwiGLU, 2 key/value heads of 4, an untied head, no biases, no dropout), with 3 layers
// and its own rotary base, init std and positions.
GptConfig llama() {
  GptConfig c = test::tiny_llama(2);
  c.num_layers = 3;
  c.rotary_base = 500000.0f;
  c.init_method_std = 0.01f;
  c.max_position_embeddings = 10;
  return c;
}

std::string refusal(const std::vector<std::string>& given, TrainOptions o) {
  try {
    take_saved_model(llama(), given, "ck/iter_0000000/meta.json", o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SavedModel, EveryModelOptionNotGivenIsTheCheckpoints) {
  TrainOptions o;  // the defaults: GPT-2, dropout 0.1
  take_saved_model(llama(), {}, "ck", o);
  const GptConfig run = gpt_config_from(o), saved = llama();
  EXPECT_EQ(run.num_layers, saved.num_layers);
  EXPECT_EQ(run.hidden, saved.hidden);
  EXPECT_EQ(run.heads, saved.heads);
  EXPECT_EQ(run.seq_length, saved.seq_length);
  EXPECT_EQ(run.vocab_size, saved.vocab_size);
  EXPECT_TRUE(run.rope());
  EXPECT_EQ(run.rotary_base, saved.rotary_base);
  EXPECT_TRUE(run.rmsnorm());
  EXPECT_EQ(run.norm_epsilon, saved.norm_epsilon);
  EXPECT_TRUE(run.swiglu);
  EXPECT_EQ(run.ffn_hidden(), 24);
  EXPECT_EQ(run.kv_heads(), 2);
  EXPECT_TRUE(run.untie_embeddings);
  EXPECT_FALSE(run.add_bias_linear);
  EXPECT_EQ(run.max_position_embeddings, 10);
  EXPECT_EQ(run.init_method_std, saved.init_method_std);
  EXPECT_EQ(run.attention_dropout, 0.0f);  // the import's, not the default 0.1
  EXPECT_EQ(run.hidden_dropout, 0.0f);
}

// A mixture of experts: its architecture is the checkpoint's, its load-balancing coefficient too
// unless given (an import's router_aux_loss_coef); a different expert count is refused.
TEST(SavedModel, AMixtureOfExpertsIsTheCheckpoints) {
  GptConfig saved = llama();
  saved.num_experts = 4;
  saved.moe_topk = 2;
  saved.moe_ffn_hidden_size = 12;
  saved.moe_renormalize = false;
  saved.moe_shared_ffn = 8;
  saved.moe_shared_gate = true;
  saved.moe_aux_loss_coeff = 0.02f;
  saved.add_qkv_bias = true;
  TrainOptions o;
  take_saved_model(saved, {}, "ck", o);
  const GptConfig run = gpt_config_from(o);
  EXPECT_EQ(run.num_experts, 4);
  EXPECT_EQ(run.moe_topk, 2);
  EXPECT_EQ(run.moe_ffn_hidden(), 12);
  EXPECT_FALSE(run.moe_renormalize);
  EXPECT_EQ(run.moe_shared_ffn, 8);
  EXPECT_TRUE(run.moe_shared_gate);
  EXPECT_EQ(run.moe_aux_loss_coeff, 0.02f);
  EXPECT_TRUE(run.add_qkv_bias);
  TrainOptions given;
  given.moe_aux_loss_coeff = 0.01;
  take_saved_model(saved, {"moe-aux-loss-coeff"}, "ck", given);
  EXPECT_EQ(gpt_config_from(given).moe_aux_loss_coeff, 0.01f);
  TrainOptions other;
  other.num_experts = 8;
  EXPECT_THROW(take_saved_model(saved, {"num-experts"}, "ck", other), InputError);
}

TEST(SavedModel, GivenFlagsThatAgreeOrMayChangeAreKept) {
  TrainOptions o;
  o.swiglu = true;  // given and equal
  o.seq_length = 8;
  o.hidden_dropout = 0.2;
  o.rotary_base = 10000.0;
  take_saved_model(llama(), {"swiglu", "seq-length", "hidden-dropout", "rotary-base"}, "ck", o);
  EXPECT_EQ(o.seq_length, 8);  // a shorter sequence: the load reads fewer positions
  EXPECT_EQ(o.hidden_dropout, 0.2);
  EXPECT_EQ(o.rotary_base, 10000.0);
  EXPECT_EQ(o.num_layers, 3);
}

TEST(SavedModel, EveryDifferingFlagIsNamedInOneLine) {
  TrainOptions o;  // --num-layers 2, --hidden-size 64 and GPT-2's LayerNorm, all given
  EXPECT_EQ(refusal({"num-layers", "hidden-size", "normalization", "seq-length"},
                    [] {
                      TrainOptions t;
                      t.seq_length = 64;
                      return t;
                    }()),
            "checkpoint 'ck/iter_0000000/meta.json' holds another model than the flags ask for: "
            "--num-layers 2 (checkpoint: 3), --hidden-size 64 (checkpoint: 16), --normalization "
            "LayerNorm (checkpoint: RMSNorm), --seq-length 64 (checkpoint: 10 at most); leave out "
            "the model flags to take the checkpoint's");
  o.swiglu = false;
  o.disable_bias_linear = false;
  o.ffn_hidden_size = 96;
  EXPECT_EQ(refusal({"swiglu", "disable-bias-linear", "vocab-size"},
                    [] {
                      TrainOptions t;
                      t.vocab_size = 100;
                      return t;
                    }()),
            "checkpoint 'ck/iter_0000000/meta.json' holds another model than the flags ask for: "
            "--vocab-size 100 (checkpoint: 20), --swiglu off (checkpoint: on), "
            "--disable-bias-linear off (checkpoint: on); leave out the model flags to take the "
            "checkpoint's");
  o = TrainOptions{};
  o.ffn_hidden_size = 96;
  o.group_query_attention = true;
  o.num_query_groups = 3;
  EXPECT_EQ(refusal({"ffn-hidden-size", "num-query-groups"}, o),
            "checkpoint 'ck/iter_0000000/meta.json' holds another model than the flags ask for: "
            "--ffn-hidden-size 96 (checkpoint: 24), --num-query-groups 3 (checkpoint: 2); leave "
            "out the model flags to take the checkpoint's");
}

// What --config sets counts as given: a checkpoint's model does not override it.
TEST(SavedModel, ConfigKeysCountAsGiven) {
  TrainOptions o;
  std::vector<std::string> set;
  apply_json_config(R"({"num_layers": 5, "train_batch_size": 8})", "c.json", o,
                    ConfigDialect::Zerotron, &set);
  EXPECT_EQ(set, (std::vector<std::string>{"num-layers", "global-batch-size"}));
  EXPECT_NE(refusal(set, o).find("--num-layers 5 (checkpoint: 3)"), std::string::npos);
}

}  // namespace
}  // namespace zt
