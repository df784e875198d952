// ZeRO's parameter groups (docs/design/moe.md): with expert parallelism a routed expert's
// parameters are cut over the expert-data-parallel group (edp), dense ones over dp. Checked on a
// MoE layout at dp 4, ep 2 (edp 2): no unit or gradient bucket mixes the groups, expert units are
// cut in edp parts and dense ones in dp parts, and each group's elements are owned exactly once
// over the ranks that hold them.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "src/model/param_layout.h"
#include "src/zero/grad_buckets.h"
#include "src/zero/partition.h"
#include "tests/support/tiny_gpt.h"

namespace zt {
namespace {

constexpr int kDp = 4, kEp = 2, kEdp = kDp / kEp;

GptConfig moe_config() {
  GptConfig c = test::tiny_llama(2);
  c.num_experts = 4;
  c.moe_topk = 2;
  c.moe_ffn_hidden_size = 12;
  c.moe_shared_ffn = 20;  // a dense MLP after the experts in the same block
  c.expert_parallel = kEp;
  return c;
}

// dp rank r holds ep rank r % ep's experts and is edp rank r / ep (the ep group: consecutive
// members of dp).
ParamLayout layout_of(int r) {
  return ParamLayout::gpt(moe_config(), 1, 0, {}, ExpertPart{r % kEp});
}

bool expert_at(const ParamLayout& l, int64_t e) {
  for (const auto& p : l.params())
    if (e >= p.offset && e < p.offset + p.numel()) return p.expert;
  ADD_FAILURE() << "element " << e << " in no parameter";
  return false;
}

TEST(PartitionGroups, ExpertUnitsAreCutOverEdpAndDenseOverDp) {
  for (int64_t unit : {16, 200, 1000, 100000}) {
    std::vector<int> dense_owner(static_cast<size_t>(layout_of(0).numel()), 0);
    std::vector<std::vector<int>> expert_owner(kEp, dense_owner);
    int64_t shard = -1;
    for (int r = 0; r < kDp; ++r) {
      const ParamLayout l = layout_of(r);
      const Partition p(l, kDp, r, unit, kEdp, r / kEp);
      EXPECT_TRUE(p.has_expert_units());
      EXPECT_EQ(p.edp_size(), kEdp);
      if (shard < 0) shard = p.shard_numel();
      EXPECT_EQ(p.shard_numel(), shard) << "equal shards on every rank";
      int64_t parts = 0, padded = 0, max_part = 0;
      int expert_units = 0;
      for (size_t k = 0; k < p.units().size(); ++k) {
        const PartitionUnit& u = p.units()[k];
        for (int64_t e = u.layout_begin; e < u.layout_begin + u.real_len; ++e)
          ASSERT_EQ(expert_at(l, e), u.expert) << "unit " << k << " mixes the groups";
        expert_units += u.expert ? 1 : 0;
        EXPECT_EQ(u.parts, u.expert ? kEdp : kDp);
        EXPECT_EQ(u.part, u.expert ? r / kEp : r);
        EXPECT_EQ(u.padded_len % (u.parts * Partition::kAlign), 0);
        EXPECT_LT(u.padded_len - u.real_len, u.parts * Partition::kAlign);
        EXPECT_EQ(u.part_len * u.parts, u.padded_len);
        EXPECT_EQ(u.shard_offset, parts) << "parts back to back in the shard";
        EXPECT_EQ(u.padded_begin, padded);
        EXPECT_LE(u.padded_len, p.max_unit());
        parts += u.part_len;
        padded += u.padded_len;
        max_part = std::max(max_part, u.part_len);
      }
      EXPECT_GT(expert_units, 0);
      EXPECT_EQ(p.shard_numel(), parts);
      EXPECT_EQ(p.padded_numel(), padded);
      EXPECT_EQ(p.max_part(), max_part);
      for (const auto& s : p.segments()) {
        const PartitionUnit& u = p.units()[static_cast<size_t>(s.unit)];
        EXPECT_EQ(l.params()[static_cast<size_t>(s.param)].expert, u.expert);
        const int64_t own = u.layout_begin + int64_t{u.part} * u.part_len;
        EXPECT_GE(s.layout_offset, own);
        EXPECT_LE(s.layout_offset + s.len, own + u.part_len) << "inside this rank's part";
        EXPECT_EQ(p.padded_of_shard(s.unit, s.shard_offset), p.padded_of(s.layout_offset));
        EXPECT_LE(s.shard_offset + s.len, p.shard_numel());
        auto& owner = u.expert ? expert_owner[static_cast<size_t>(r % kEp)] : dense_owner;
        for (int64_t i = 0; i < s.len; ++i) ++owner[static_cast<size_t>(s.layout_offset + i)];
      }
    }
    const ParamLayout l = layout_of(0);
    for (int64_t e = 0; e < l.numel(); ++e) {
      const auto i = static_cast<size_t>(e);
      if (expert_at(l, e)) {
        EXPECT_EQ(dense_owner[i], 0);
        for (int q = 0; q < kEp; ++q)
          ASSERT_EQ(expert_owner[static_cast<size_t>(q)][i], 1)
              << "expert element " << e << " of ep rank " << q << ", unit " << unit;
      } else {
        ASSERT_EQ(dense_owner[i], 1) << "dense element " << e << ", unit " << unit;
      }
    }
  }
}

TEST(PartitionGroups, DefaultEdpIsDp) {
  const ParamLayout l = layout_of(1);
  const Partition a(l, kDp, 3, 200), b(l, kDp, 3, 200, kDp, 3);
  ASSERT_EQ(a.units().size(), b.units().size());
  for (size_t k = 0; k < a.units().size(); ++k) {
    EXPECT_EQ(a.units()[k].parts, kDp);
    EXPECT_EQ(a.units()[k].part, 3);
    EXPECT_EQ(a.units()[k].padded_len, b.units()[k].padded_len);
  }
  EXPECT_EQ(a.shard_numel(), b.shard_numel());
}

TEST(PartitionGroups, DenseLayoutIgnoresTheExpertGroup) {
  GptConfig c = test::tiny_llama(2);
  const ParamLayout l = ParamLayout::gpt(c);
  const Partition a(l, kDp, 2, 200), b(l, kDp, 2, 200, kEdp, 1);
  EXPECT_FALSE(b.has_expert_units());
  ASSERT_EQ(a.units().size(), b.units().size());
  for (size_t k = 0; k < a.units().size(); ++k) {
    EXPECT_EQ(b.units()[k].layout_begin, a.units()[k].layout_begin);
    EXPECT_EQ(b.units()[k].padded_len, a.units()[k].padded_len);
    EXPECT_EQ(b.units()[k].part, 2);
  }
  EXPECT_EQ(a.max_unit(), b.max_unit());
  EXPECT_EQ(a.segments().size(), b.segments().size());
}

TEST(PartitionGroups, GradientBucketsNeverMixTheGroups) {
  const ParamLayout l = layout_of(0);
  for (int64_t bucket : {16, 200, 1000, 100000}) {
    const GradBuckets buckets(l, bucket);
    std::vector<int> covered(static_cast<size_t>(l.numel()), 0);
    int expert = 0;
    for (const auto& b : buckets.buckets()) {
      EXPECT_LE(b.end - b.begin, bucket);
      expert += b.expert ? 1 : 0;
      for (int64_t e = b.begin; e < b.end; ++e) {
        ASSERT_EQ(expert_at(l, e), b.expert) << "bucket [" << b.begin << ", " << b.end << ")";
        ++covered[static_cast<size_t>(e)];
      }
    }
    EXPECT_GT(expert, 0);
    for (int c : covered) ASSERT_EQ(c, 1);
  }
}

}  // namespace
}  // namespace zt
