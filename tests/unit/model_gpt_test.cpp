// Whole-model checks that need no PyTorch: gradients against finite differences, determinism,
// and dropout masks replayed consistently between forward and backward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "src/data/mock_data.h"
#include "tests/support/model_rig.h"
#include "tests/support/tiny_gpt.h"

namespace zt {
namespace {

using test::tiny_gpt;

struct Fixture : test::ModelRig {
  explicit Fixture(const GptConfig& c, int batch = 2)
      : ModelRig(c, batch, DType::F32, 42),
        tokens(static_cast<size_t>(batch * c.seq_length)),
        targets(tokens.size()) {
    MockData data(3, c.seq_length, c.vocab_size);
    for (int b = 0; b < batch; ++b)
      data.sample(b, tokens.data() + b * c.seq_length, targets.data() + b * c.seq_length);
    // Non-trivial layernorm and bias values so their gradients are exercised.
    float* p = opt.master_params().f32();
    for (const auto& s : layout.params())
      if (s.init != ParamInit::Normal)
        for (int64_t i = 0; i < s.numel(); ++i)
          p[s.offset + i] += 0.1f * std::sin(static_cast<float>(s.offset + i));
  }
  double loss() { return model.forward_loss(tokens.data(), targets.data(), opt, acts); }
  double backward(DropoutSeeds rng = {}) {
    opt.zero_grad();
    const float n = static_cast<float>(tokens.size());
    return model.forward_backward(tokens.data(), targets.data(), 1.0f / n, opt, acts, rng);
  }
  std::vector<int32_t> tokens, targets;
};

void expect_gradients_match_finite_differences(const GptConfig& c) {
  Fixture f(c);
  f.backward();
  std::vector<float> grad(f.opt.working_grads().f32(),
                          f.opt.working_grads().f32() + f.layout.numel());
  float* p = f.opt.master_params().f32();
  for (const auto& s : f.layout.params()) {
    // The element with the largest gradient in each tensor, and one fixed element.
    int64_t big = 0;
    for (int64_t i = 0; i < s.numel(); ++i)
      if (std::abs(grad[s.offset + i]) > std::abs(grad[s.offset + big])) big = i;
    for (int64_t i : {big, s.numel() / 3}) {
      float& w = p[s.offset + i];
      const float saved = w, eps = 1e-2f;
      w = saved + eps;
      const double up = f.loss();
      w = saved - eps;
      const double down = f.loss();
      w = saved;
      const double fd = (up - down) / (2.0 * eps);
      const double g = grad[s.offset + i];
      EXPECT_NEAR(g, fd, 2e-4 + 3e-2 * std::abs(fd)) << s.name << "[" << i << "]";
    }
  }
}

TEST(Gpt, GradientsMatchFiniteDifferences) {
  expect_gradients_match_finite_differences(tiny_gpt());
}

// Every Llama-family choice together (rope, RMSNorm, SwiGLU, grouped-query attention with 1 and
// 2 groups and as multi-head attention, untied head, no biases), and each alone on GPT-2.
TEST(Gpt, LlamaGradientsMatchFiniteDifferences) {
  for (int groups : {1, 2, 4}) {
    SCOPED_TRACE(groups);
    expect_gradients_match_finite_differences(test::tiny_llama(groups));
  }
  for (int choice = 0; choice < 6; ++choice) {
    SCOPED_TRACE(choice);
    GptConfig c = tiny_gpt();
    c.heads = 4;
    if (choice == 0) c.position_embedding = PositionEmbedding::Rope;
    if (choice == 1) c.normalization = Normalization::RMSNorm;
    if (choice == 2) c.swiglu = true, c.ffn_hidden_size = 40;
    if (choice == 3) c.num_query_groups = 2;
    if (choice == 4) c.untie_embeddings = true;
    if (choice == 5) c.add_bias_linear = false;
    expect_gradients_match_finite_differences(c);
  }
}

// The Llama layout: names, shapes, counts. q|k|v rows h + 2·G·d, gate|up 2f, no biases, no
// position table, RMSNorm weights only, the output layer after the final norm.
TEST(Gpt, LlamaLayoutHasTheLlamaParameters) {
  const GptConfig c = test::tiny_llama(2);
  const ParamLayout l = ParamLayout::gpt(c);
  int64_t total = 0;
  for (const auto& p : l.params()) total += p.numel();
  EXPECT_EQ(total, c.num_parameters());
  EXPECT_EQ(l.find("layers.0.attn.qkv.weight").shape, (Shape{16 + 2 * 2 * 4, 16}));
  EXPECT_EQ(l.find("layers.0.mlp.fc.weight").shape, (Shape{48, 16}));
  EXPECT_EQ(l.find("layers.0.mlp.proj.weight").shape, (Shape{16, 24}));
  EXPECT_EQ(l.find("output_layer.weight").shape, (Shape{32, 16}));
  for (const char* absent : {"embedding.position", "layers.0.ln1.bias", "layers.1.attn.qkv.bias",
                             "layers.1.mlp.proj.bias", "final_ln.bias"})
    EXPECT_THROW(l.find(absent), Error) << absent;
  EXPECT_EQ(l.params().back().name, "output_layer.weight");
  // 2 layers x (2 norms + 4 weights) + embedding + final norm + output layer.
  EXPECT_EQ(l.params().size(), size_t{15});
}

TEST(Gpt, ForwardBackwardIsBitwiseDeterministic) {
  Fixture a(tiny_gpt(0.1f)), b(tiny_gpt(0.1f));
  const double la = a.backward(DropoutSeeds{9, 4}), lb = b.backward(DropoutSeeds{9, 4});
  EXPECT_EQ(la, lb);
  const float* ga = a.opt.working_grads().f32();
  const float* gb = b.opt.working_grads().f32();
  EXPECT_TRUE(std::equal(ga, ga + a.layout.numel(), gb));
}

TEST(Gpt, DropoutChangesTheLossAndBackwardReplaysTheSameMask) {
  Fixture f(tiny_gpt(0.2f));
  const double clean = f.loss();
  const double dropped = f.backward(DropoutSeeds{1, 0});
  EXPECT_NE(clean, dropped);
  // With the mask fixed by (seed, sample), the gradient still matches finite differences of
  // the dropped-out loss.
  std::vector<float> grad(f.opt.working_grads().f32(),
                          f.opt.working_grads().f32() + f.layout.numel());
  const auto& s = f.layout.find("layers.1.mlp.fc.weight");
  float* p = f.opt.master_params().f32();
  int64_t big = 0;
  for (int64_t i = 0; i < s.numel(); ++i)
    if (std::abs(grad[s.offset + i]) > std::abs(grad[s.offset + big])) big = i;
  float& w = p[s.offset + big];
  const float saved = w, eps = 1e-2f;
  w = saved + eps;
  const double up = f.backward(DropoutSeeds{1, 0});
  w = saved - eps;
  const double down = f.backward(DropoutSeeds{1, 0});
  w = saved;
  EXPECT_NEAR(grad[s.offset + big], (up - down) / (2.0 * eps),
              2e-4 + 3e-2 * std::abs(grad[s.offset + big]));
}

TEST(ZeroOptimizer, OverflowSkipsTheStepAndLeavesParametersAlone) {
  Fixture f(tiny_gpt());
  f.backward();
  std::vector<float> before(f.opt.master_params().f32(),
                            f.opt.master_params().f32() + f.layout.numel());
  f.opt.working_grads().f32()[5] = INFINITY;
  const StepResult r = f.opt.step(1e-3, 1.0);
  EXPECT_TRUE(r.skipped);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), f.opt.master_params().f32()));
  EXPECT_EQ(f.opt.adam_step(), 0);
}

}  // namespace
}  // namespace zt
