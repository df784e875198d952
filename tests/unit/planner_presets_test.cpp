// The published model shapes of `estimate --preset`: their parameter counts against the ones
// their authors state, a mixture of experts' active parameters and FLOPs per token included.
#include <gtest/gtest.h>

#include "src/config/derive.h"
#include "src/planner/model_presets.h"

namespace zt {
namespace {

GptConfig preset(const char* name) {
  TrainFlags none;
  TrainOptions o;
  apply_model_preset(name, none, o);
  return gpt_config_from(o);
}

TEST(ModelPresets, Mixtral8x7bHasItsStatedParametersAndActiveParameters) {
  const GptConfig c = preset("mixtral-8x7b");
  EXPECT_EQ(c.num_experts, 8);
  EXPECT_EQ(c.moe_topk, 2);
  EXPECT_TRUE(c.moe_layer(0) && c.moe_layer(31));
  // Mistral AI's figures: 46.7B parameters, 12.9B used per token.
  EXPECT_NEAR(static_cast<double>(c.num_parameters()), 46.7e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(c.num_parameters(true)), 12.9e9, 0.05e9);
  // FLOPs per token: 6 x the active parameters and the attention's 12 L h s.
  EXPECT_DOUBLE_EQ(c.flops_per_token(),
                   6.0 * static_cast<double>(c.num_parameters(true)) + 12.0 * 32 * 4096.0 * 32768);
}

TEST(ModelPresets, DenseModelsActivateEveryParameter) {
  const GptConfig c = preset("llama2-7b");
  EXPECT_FALSE(c.moe());
  EXPECT_EQ(c.num_parameters(true), c.num_parameters());
  EXPECT_NEAR(static_cast<double>(c.num_parameters()), 6.74e9, 0.01e9);
}

}  // namespace
}  // namespace zt
