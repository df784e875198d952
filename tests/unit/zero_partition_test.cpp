// The partition ZeRO, checkpoints and the planner share: every real element is owned by exactly
// one rank, shards are equal, units never cross blocks and are the configured constant size.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "src/model/param_layout.h"
#include "src/zero/partition.h"

namespace zt {
namespace {

GptConfig config() {
  GptConfig c;
  c.num_layers = 3;
  c.hidden = 24;
  c.heads = 2;
  c.seq_length = 10;
  c.vocab_size = 50;
  c.padded_vocab_size = 64;
  return c;
}

TEST(Partition, EveryElementHasExactlyOneOwner) {
  const ParamLayout layout = ParamLayout::gpt(config());
  for (int dp : {1, 2, 3, 4, 8}) {
    for (int64_t unit : {16, 1000, 100000}) {
      std::vector<int> owners(static_cast<size_t>(layout.numel()), 0);
      int64_t shard = -1;
      for (int r = 0; r < dp; ++r) {
        const Partition p(layout, dp, r, unit);
        if (shard < 0) shard = p.shard_numel();
        EXPECT_EQ(p.shard_numel(), shard) << "equal shards";
        EXPECT_EQ(p.padded_numel(), shard * dp);
        int64_t last_end = -1;
        for (const auto& s : p.segments()) {
          EXPECT_GE(s.shard_offset, last_end) << "segments in shard order";
          last_end = s.shard_offset + s.len;
          EXPECT_LE(last_end, shard);
          for (int64_t i = 0; i < s.len; ++i) ++owners[static_cast<size_t>(s.layout_offset + i)];
          const auto& spec = layout.params()[static_cast<size_t>(s.param)];
          EXPECT_GE(s.layout_offset, spec.offset);
          EXPECT_LE(s.layout_offset + s.len, spec.offset + spec.numel());
        }
        int64_t longest_row = 0;
        for (const auto& spec : layout.params())
          longest_row = std::max(longest_row, spec.row_len());
        for (const auto& u : p.units()) {
          EXPECT_EQ(u.padded_len % (dp * Partition::kAlign), 0);
          EXPECT_LT(u.padded_len - u.real_len, dp * Partition::kAlign) << "padding < a quantum";
          EXPECT_LE(u.real_len, std::max(unit, longest_row)) << "bounded by the unit flag";
          EXPECT_GE(u.padded_begin, p.padded_block_begin(u.block));
          EXPECT_LE(u.padded_begin + u.padded_len,
                    p.padded_block_begin(u.block) + p.padded_block_len(u.block));
        }
        // Every chunk the model reaches (whole rows, chunk_rows) lies inside one unit.
        for (const auto& spec : layout.params()) {
          const int64_t step = spec.chunk_rows(unit) * spec.row_len();
          for (int64_t at = 0; at < spec.numel(); at += step) {
            const int64_t end = std::min(spec.numel(), at + step);
            EXPECT_EQ(p.unit_of(spec.offset + at), p.unit_of(spec.offset + end - 1))
                << spec.name << " chunk at " << at << " unit " << unit;
          }
        }
      }
      for (size_t i = 0; i < owners.size(); ++i)
        ASSERT_EQ(owners[i], 1) << "element " << i << " dp " << dp << " unit " << unit;
    }
  }
}

TEST(Partition, PaddingIsSmall) {
  const ParamLayout layout = ParamLayout::gpt(config());
  const Partition p(layout, 4, 0, 1 << 20);
  // Less than one quantum (Nd·kAlign) of padding per unit; here one unit per block.
  EXPECT_EQ(p.units().size(), static_cast<size_t>(layout.num_blocks()));
  EXPECT_LT(p.padded_numel() - layout.numel(),
            static_cast<int64_t>(p.units().size()) * 4 * Partition::kAlign);
  EXPECT_EQ(p.padded_of(layout.blocks()[1].begin), p.padded_block_begin(1));
}

}  // namespace
}  // namespace zt
