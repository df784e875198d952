// ParamLayout split over pipeline stages: the stages together hold every parameter once (plus
// the last stage's copy of the word embedding for the tied head, with the first stage's values),
// layers go to virtual stages as Megatron-LM assigns them, and layer counts that do not divide
// are InputErrors.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "src/core/error.h"
#include "src/model/param_layout.h"

namespace zt {
namespace {

GptConfig model(int layers) {
  GptConfig c;
  c.num_layers = layers;
  c.hidden = 16;
  c.heads = 4;
  c.seq_length = 8;
  c.vocab_size = 30;
  c.padded_vocab_size = padded_vocab_size(c.vocab_size, 4, 2);
  return c;
}

std::vector<int> counts(const PipelineSplit& s) {
  std::vector<int> out;
  for (int c = 0; c < s.chunks; ++c)
    for (int st = 0; st < s.stages; ++st) out.push_back(virtual_stage_layers(s, st, c).count);
  return out;
}

// megatron-core's get_num_layers_to_build / get_transformer_layer_offset: the first / last stage
// its own count, the rest even over the middle; with chunks each stage's layers even over them,
// virtual stages consecutive in their order.
TEST(PipelineSplitTest, FirstAndLastStageCountsAsMegatronCore) {
  EXPECT_EQ(counts({10, 4, 1, 1, 3}), (std::vector<int>{1, 3, 3, 3}));
  EXPECT_EQ(counts({10, 4, 1, 4, 0}), (std::vector<int>{4, 2, 2, 2}));
  EXPECT_EQ(counts({10, 4, 1, 0, 1}), (std::vector<int>{3, 3, 3, 1}));
  EXPECT_EQ(counts({5, 2, 1, 1, 4}), (std::vector<int>{1, 4}));
  EXPECT_EQ(counts({8, 4, 2, 0, 0}), (std::vector<int>{1, 1, 1, 1, 1, 1, 1, 1}));
  // 16 layers, P 4, v 2, first 2, last 2: 1 + 3 + 3 + 1 per round; megatron-core's offset of
  // (rank 1, vp 1) is vp·8 + 1 + 0·3 = 9.
  const PipelineSplit s{16, 4, 2, 2, 2};
  EXPECT_EQ(counts(s), (std::vector<int>{1, 3, 3, 1, 1, 3, 3, 1}));
  EXPECT_EQ(virtual_stage_layers(s, 1, 1).first, 9);
  EXPECT_EQ(virtual_stage_layers(s, 3, 1).first, 15);
  EXPECT_EQ(stage_layer_count(s, 2), 6);
  // Every layer exactly once, in order of virtual stage.
  for (const PipelineSplit& x : {PipelineSplit{10, 4, 1, 1, 3}, PipelineSplit{16, 4, 2, 2, 2},
                                 PipelineSplit{12, 3, 2, 0, 0}}) {
    int next = 0;
    for (int c = 0; c < x.chunks; ++c)
      for (int st = 0; st < x.stages; ++st) {
        const LayerSpan l = virtual_stage_layers(x, st, c);
        EXPECT_EQ(l.first, next);
        next += l.count;
      }
    EXPECT_EQ(next, x.num_layers);
  }
}

TEST(PipelineSplitTest, SplitsThatDoNotDivideAreRefused) {
  EXPECT_NE(split_problem({10, 4, 1, 0, 2}), "");  // 8 over 3
  EXPECT_NE(split_problem({10, 4, 1, 0, 0}), "");  // 10 over 4
  EXPECT_NE(split_problem({4, 2, 1, 1, 1}), "");   // 2 layers left, no stage between
  EXPECT_NE(split_problem({4, 1, 1, 1, 0}), "");   // one stage
  EXPECT_NE(split_problem({16, 4, 2, 1, 3}), "");  // 1 layer in 2 chunks
  EXPECT_THROW(virtual_stage_layers({10, 4, 1, 0, 2}, 0, 0), InputError);
  EXPECT_EQ(split_problem({10, 4, 1, 1, 3}), "");
  // A stage of the uneven split holds exactly its layers.
  const GptConfig c = model(10);
  const PipelinePart last{4, 3, 1, 1, 3};
  EXPECT_EQ(last.layers(c, 0), (std::vector<int>{7, 8, 9}));
  const ParamLayout l = ParamLayout::gpt(c, 1, 0, last);
  EXPECT_GE(l.layer_block(7), 0);
  EXPECT_LT(l.layer_block(6), 0);
}

TEST(PipelineLayout, StagesHoldEveryParameterOnce) {
  const GptConfig c = model(8);
  for (int tp : {1, 2})
    for (int pp : {1, 2, 4})
      for (int chunks : {1, 2}) {
        if (chunks > 1 && pp == 1) continue;
        const ParamLayout whole = ParamLayout::gpt(c, tp, 0);
        std::map<std::string, int> held;
        int64_t total = 0;
        for (int s = 0; s < pp; ++s) {
          const ParamLayout l = ParamLayout::gpt(c, tp, 0, {pp, s, chunks});
          total += l.numel();
          for (const ParamSpec& p : l.params()) {
            const bool head_copy = p.block == l.head_block();
            if (!head_copy) ++held[p.name];
            EXPECT_EQ(p.shape, whole.find(p.name).shape) << p.name;
          }
          EXPECT_EQ(l.embedding_block() >= 0, s == 0);
          EXPECT_EQ(l.final_block() >= 0, s == pp - 1);
          EXPECT_EQ(l.head_block() >= 0, pp > 1 && s == pp - 1);
        }
        EXPECT_EQ(held.size(), whole.params().size());
        for (const auto& [name, n] : held) EXPECT_EQ(n, 1) << name;
        const int64_t head = pp > 1 ? whole.find("embedding.word").numel() : 0;
        EXPECT_EQ(total, whole.numel() + head);
      }
}

TEST(PipelineLayout, VirtualStagesTakeConsecutiveLayers) {
  const GptConfig c = model(8);
  // pp 2 x 2 chunks: virtual stages 0..3 hold two layers each; stage 0 runs virtual stages 0, 2.
  const PipelinePart s0{2, 0, 2}, s1{2, 1, 2};
  EXPECT_EQ(s0.layers(c, 0), (std::vector<int>{0, 1}));
  EXPECT_EQ(s0.layers(c, 1), (std::vector<int>{4, 5}));
  EXPECT_EQ(s1.layers(c, 0), (std::vector<int>{2, 3}));
  EXPECT_EQ(s1.layers(c, 1), (std::vector<int>{6, 7}));
  const ParamLayout l = ParamLayout::gpt(c, 1, 0, s1);
  EXPECT_EQ(l.layer_block(0), -1);
  EXPECT_GE(l.layer_block(6), 0);
  EXPECT_LT(l.layer_block(3), l.layer_block(6));  // chunk order is forward order
}

TEST(PipelineLayout, HeadCopyStartsEqualToTheEmbedding) {
  const GptConfig c = model(4);
  const ParamLayout first = ParamLayout::gpt(c, 2, 1, {2, 0, 1});
  const ParamLayout last = ParamLayout::gpt(c, 2, 1, {2, 1, 1});
  std::vector<float> a(static_cast<size_t>(first.numel())), b(static_cast<size_t>(last.numel()));
  init_parameters(first, 7, a.data());
  init_parameters(last, 7, b.data());
  const ParamSpec& w0 = first.find("embedding.word");
  const ParamSpec& w1 = last.find("embedding.word");
  ASSERT_EQ(w1.block, last.head_block());
  for (int64_t i = 0; i < w0.numel(); ++i)
    ASSERT_EQ(a[static_cast<size_t>(w0.offset + i)], b[static_cast<size_t>(w1.offset + i)]);
}

TEST(PipelineLayout, LayersThatDoNotDivideAreRefused) {
  EXPECT_THROW(ParamLayout::gpt(model(6), 1, 0, {4, 0, 1}), InputError);
  EXPECT_THROW(ParamLayout::gpt(model(8), 1, 0, {2, 0, 3}), InputError);
  EXPECT_NO_THROW(ParamLayout::gpt(model(8), 1, 0, {4, 3, 2}));
}

}  // namespace
}  // namespace zt
