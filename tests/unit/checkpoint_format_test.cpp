// The computed maps a reshaping load and the export read through: locate_tp inverts
// ParamSpec::full_index for every element of every tensor-parallel rank, full_run and the runs
// it returns are really contiguous, locate_shard inverts the partition's segments (with
// locate_ep, under an expert split too); and the shard file format round-trips any byte range
// while catching a flipped bit in the block it reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <tuple>
#include <vector>

#include "src/checkpoint/layout_map.h"
#include "src/checkpoint/meta.h"
#include "src/checkpoint/shard.h"
#include "src/config/training_settings.h"
#include "tests/support/tiny_gpt.h"

namespace zt {
namespace {

GptConfig tiny() {
  GptConfig c;
  c.num_layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.seq_length = 8;
  c.vocab_size = 60;
  c.padded_vocab_size = 64;
  return c;
}

TEST(CheckpointMap, LocateTpInvertsFullIndex) {
  for (int tp : {1, 2, 4}) {
    for (int r = 0; r < tp; ++r) {
      const ParamLayout L = ParamLayout::gpt(tiny(), tp, r);
      for (const ParamSpec& p : L.params()) {
        for (int64_t i = 0; i < p.numel(); ++i) {
          const int64_t f = p.full_index(i);
          const TpLocation t = locate_tp(p, tp, f);
          if (p.split == TpSplit::Replicated) {
            EXPECT_EQ(t.local, f) << p.name;
            continue;
          }
          ASSERT_EQ(t.tp_rank, r) << p.name << " tp " << tp << " element " << i;
          ASSERT_EQ(t.local, i) << p.name << " tp " << tp;
          ASSERT_GE(t.run, 1);
          // The run stays on this rank and contiguous on both sides.
          ASSERT_LE(i + t.run, p.numel());
          ASSERT_EQ(p.full_index(i + t.run - 1), f + t.run - 1) << p.name;
        }
        for (int64_t i = 0; i < p.numel(); i += full_run(p, i)) {
          const int64_t n = full_run(p, i);
          ASSERT_GE(n, 1);
          for (int64_t k = 0; k < n; ++k) ASSERT_EQ(p.full_index(i + k), p.full_index(i) + k);
        }
      }
    }
  }
}

TEST(CheckpointMap, LocateShardInvertsThePartition) {
  const ParamLayout L = ParamLayout::gpt(tiny(), 2, 1);
  for (int dp : {1, 2, 4}) {
    for (int64_t unit : {48, 1000, 1 << 20}) {
      const Partition any(L, dp, 0, unit);
      for (int d = 0; d < dp; ++d) {
        const Partition P(L, dp, d, unit);
        for (const ShardSegment& s : P.segments()) {
          const ShardLocation at = locate_shard(any, s.layout_offset);
          EXPECT_EQ(at.dp_rank, d);
          EXPECT_EQ(at.offset, s.shard_offset);
          EXPECT_GE(at.run, s.len);  // a segment lies inside one part
        }
      }
    }
  }
}

GptConfig tiny_moe(int ep) {
  GptConfig c = test::tiny_llama(2);
  c.num_experts = 4;
  c.moe_topk = 2;
  c.moe_ffn_hidden_size = 12;
  c.moe_layer_freq = 2;
  c.expert_parallel = ep;
  return c;
}

// Under an expert split, a full-tensor element found from ep rank 0's spec (locate_ep, then
// locate_tp on its stack) and placed by ep rank 0's partition (locate_shard, experts cut over
// dp / ep) is the element every (ep, tp, dp) rank keeps in its own shard: the rank and the offset.
TEST(CheckpointMap, LocateEpAndShardInvertAnExpertSplit) {
  for (int ep : {1, 2, 4})
    for (int tp : {1, 2})
      for (int dp : {ep, 2 * ep}) {
        const GptConfig c = tiny_moe(ep);
        const ParamLayout L0 = ParamLayout::gpt(c, tp, 0, {}, ExpertPart{0});
        const Partition any(L0, dp, 0, 100, dp / ep, 0);
        int64_t experts = 0;
        for (int d = 0; d < dp; ++d)
          for (int r = 0; r < tp; ++r) {
            const ParamLayout L = ParamLayout::gpt(c, tp, r, {}, ExpertPart{d % ep});
            const Partition P(L, dp, d, 100, dp / ep, d / ep);
            for (const ShardSegment& s : P.segments()) {
              const ParamSpec& p = L.params()[static_cast<size_t>(s.param)];
              const ParamSpec& p0 = L0.params()[static_cast<size_t>(s.param)];
              for (int64_t k = 0; k < s.len; ++k) {
                const int64_t i = s.layout_offset - p.offset + k;
                const EpLocation e = locate_ep(p0, ep, p.full_index(i));
                ASSERT_EQ(e.ep_rank, p.expert ? d % ep : 0) << p.name;
                ASSERT_GE(e.run, 1);
                const TpLocation t = locate_tp(p0, tp, e.element);
                if (p.split != TpSplit::Replicated) {
                  ASSERT_EQ(t.tp_rank, r) << p.name;
                  ASSERT_EQ(t.local, i) << p.name;
                }
                const ShardLocation at = locate_shard(any, p.offset + t.local, ep, e.ep_rank);
                ASSERT_EQ(at.dp_rank, d) << p.name << " ep " << ep;
                ASSERT_EQ(at.offset, s.shard_offset + k) << p.name;
              }
              if (p.expert) experts += s.len;
            }
          }
        EXPECT_GT(experts, 0);
      }
}

// A stage's files hold every element of its shard except the last stage's tied head copy: under
// every dp rank and partition unit, each non-head segment lies below the saved section and each
// head segment at or above it (the head's units are the last of every shard).
TEST(CheckpointMap, SavedStageLeavesOutOnlyTheTiedHeadCopy) {
  for (int pp : {1, 2}) {
    for (int stage : {0, 1}) {
      for (int dp : {1, 2, 4}) {
        for (int64_t unit : {48, 1000, 1 << 20}) {
          CheckpointLayout s;
          s.model = tiny();
          s.tp = 2;
          s.dp = dp;
          s.pp = pp;
          s.stage = stage;
          s.partition_unit = unit;
          for (int r = 0; r < pp; ++r) {
            const SavedStage st = saved_stage(s, r);
            const ParamLayout& L = st.layout;
            const int head = L.head_block();
            EXPECT_EQ(head >= 0, pp > 1 && r == pp - 1);
            const int64_t word = head < 0 ? 0 : L.blocks()[static_cast<size_t>(head)].numel();
            if (stage == 0) {
              EXPECT_EQ(st.section, L.numel() - word);
              EXPECT_EQ(shard_header(s, st, 1, 0).shard_numel, st.section);
              continue;
            }
            int64_t head_elems = 0;
            for (int d = 0; d < dp; ++d) {
              const Partition part(L, dp, d, unit);
              for (const ShardSegment& g : part.segments()) {
                if (L.params()[static_cast<size_t>(g.param)].block == head) {
                  EXPECT_GE(g.shard_offset, st.section);
                  head_elems += g.len;
                } else {
                  EXPECT_LE(g.shard_offset + g.len, st.section);
                }
              }
              EXPECT_EQ(shard_header(s, st, 1, d).shard_numel, st.section);
            }
            EXPECT_EQ(head_elems, word);
          }
        }
      }
    }
  }
}

// The standard check value, and every split of a longer buffer (the 8-byte steps and the tail).
TEST(CheckpointShard, Crc32IsTheStandardOne) {
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);
  std::vector<unsigned char> b(1000);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<unsigned char>(i * 7 + 3);
  uint32_t bytewise = 0;
  for (unsigned char c : b) bytewise = crc32(&c, 1, bytewise);
  for (size_t cut : {0, 1, 7, 8, 9, 500, 999})
    EXPECT_EQ(crc32(b.data() + cut, b.size() - cut, crc32(b.data(), cut)), bytewise) << cut;
}

TEST(CheckpointShard, AnyRangeReadsBackAndAFlippedBitIsCaught) {
  const std::filesystem::path dir = ::testing::TempDir() + "zt_shard_format";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ShardHeader h;
  h.tp = 2;
  h.tp_rank = 1;
  h.dp = 3;
  h.dp_rank = 2;
  h.zero_stage = 2;
  h.iteration = 7;
  h.partition_unit = 96;
  h.layout_numel = 1000000;
  h.shard_numel = 700001;  // three sections of several blocks, the last ones partial
  std::vector<float> data(static_cast<size_t>(3 * h.shard_numel));
  std::iota(data.begin(), data.end(), 0.5f);
  uint32_t crc = 0;
  {
    ShardWriter w((dir / "s.bin").string(), h);
    // Uneven appends: the block checksums must not depend on how the bytes arrive.
    for (size_t at = 0; at < data.size();) {
      const size_t n = std::min<size_t>(data.size() - at, 12345 + at % 777);
      w.append(data.data() + at, n * 4);
      at += n;
    }
    crc = w.finish();
  }
  EXPECT_EQ(std::filesystem::file_size(dir / "s.bin"), h.file_bytes());
  LoadAccounting acct;
  {
    ShardReader r(dir, "s.bin", h, crc, acct);
    BlockCache cache(acct);
    for (const auto& [k, first, n] : std::vector<std::tuple<int, int64_t, int64_t>>{
             {0, 0, 700001}, {1, 3, 5}, {2, 262140, 300000}, {2, 700000, 1}, {1, 0, 0}}) {
      std::vector<float> got(static_cast<size_t>(n));
      r.read(k, first, n, got.data(), cache);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(got[static_cast<size_t>(i)],
                  data[static_cast<size_t>(k * h.shard_numel + first + i)]);
    }
    EXPECT_LE(acct.peak, BlockCache::kSlots * ShardHeader::kBlockBytes + 64 * 1024);
  }
  EXPECT_EQ(acct.held, 0u);
  // Another rank's header, or a different iteration, is refused.
  ShardHeader other = h;
  other.iteration = 8;
  EXPECT_THROW(ShardReader(dir, "s.bin", other, crc, acct), InputError);
  // One flipped bit in section 1: a read of its block is refused, a read elsewhere is not.
  {
    std::fstream f(dir / "s.bin", std::ios::in | std::ios::out | std::ios::binary);
    const auto at = static_cast<std::streamoff>(h.section_offset(1) + 4 * 400000);
    char c = 0;
    f.seekg(at);
    f.get(c);
    f.seekp(at);
    f.put(static_cast<char>(c ^ 0x04));
  }
  ShardReader r(dir, "s.bin", h, crc, acct);
  BlockCache cache(acct);
  std::vector<float> got(10);
  EXPECT_NO_THROW(r.read(1, 0, 10, got.data(), cache));
  try {
    r.read(1, 399990, 20, got.data(), cache);
    ADD_FAILURE() << "a corrupt block was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is corrupt"), std::string::npos) << e.what();
  }
}

// A pipeline stage's file records its stage (header version 4): read back under its own header,
// refused under another stage's, another chunk count or no pipeline, with the stage named.
TEST(CheckpointShard, APipelineStagesHeaderNamesItsStage) {
  const std::filesystem::path dir = ::testing::TempDir() + "zt_shard_stage";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ShardHeader h;
  h.pp_rank = 1;
  h.pp = 2;
  h.chunks = 2;
  h.layout_numel = h.shard_numel = 1000;
  EXPECT_EQ(h.version(), 4u);
  const std::vector<float> data(3000, 0.25f);
  ShardWriter w((dir / "s.bin").string(), h);
  w.append(data.data(), data.size() * 4);
  const uint32_t crc = w.finish();
  LoadAccounting acct;
  {
    ShardReader r(dir, "s.bin", h, crc, acct);
    BlockCache cache(acct);
    std::vector<float> got(1000);
    r.read(2, 0, 1000, got.data(), cache);
    EXPECT_EQ(got, std::vector<float>(1000, 0.25f));
  }
  for (const auto& [pp_rank, pp, chunks] :
       std::vector<std::tuple<int, int, int>>{{0, 2, 2}, {1, 2, 1}, {0, 1, 1}}) {
    ShardHeader other = h;
    other.pp_rank = pp_rank;
    other.pp = pp;
    other.chunks = chunks;
    try {
      ShardReader(dir, "s.bin", other, crc, acct);
      ADD_FAILURE() << "read as pp rank " << pp_rank << " of " << pp << ", " << chunks << " chunks";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("does not match meta.json: it holds pp rank 1 of 2, 2 "
                                           "chunks"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(CheckpointMeta, FieldsOfTheWrongTypeOrRangeAreRefused) {
  nlohmann::json meta = {
      {"format", "zerotron-checkpoint-3"},
      {"iteration", 3},
      {"partition_unit_elems", 100},
      {"model", model_to_json(tiny())},
      {"layout",
       {{"tensor_model_parallel_size", 2}, {"data_parallel_size", 2}, {"zero_stage", 3}}}};
  EXPECT_EQ(read_layout(meta, "m").tp, 2);
  EXPECT_EQ(read_layout(meta, "m").pp, 1);  // absent: written before pipelines
  EXPECT_EQ(read_layout(meta, "m").ep, 1);  // absent: written before expert parallelism
  {
    nlohmann::json moe = meta;
    moe["model"] = model_to_json(tiny_moe(1));
    moe["layout"]["expert_model_parallel_size"] = 2;
    EXPECT_EQ(read_layout(moe, "m").ep, 2);
    EXPECT_FALSE(model_from_json(moe["model"], "m").expert_parallel > 1);  // not the model's
    for (const nlohmann::json& bad_ep : std::vector<nlohmann::json>{0, 3, 4, "2", 2.5}) {
      nlohmann::json bad = moe;  // 3 and 4 do not divide dp 2 (3 nor the 4 experts)
      bad["layout"]["expert_model_parallel_size"] = bad_ep;
      EXPECT_THROW(read_layout(bad, "m"), InputError) << bad_ep.dump();
    }
    nlohmann::json dense = meta;  // no experts to split
    dense["layout"]["expert_model_parallel_size"] = 2;
    EXPECT_THROW(read_layout(dense, "m"), InputError);
  }
  {
    nlohmann::json pp = meta;
    pp["layout"]["pipeline_model_parallel_size"] = 2;
    pp["layout"]["virtual_pipeline_model_parallel_size"] = 1;
    EXPECT_EQ(read_layout(pp, "m").pp, 2);
  }
  for (auto [path, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"/layout/pipeline_model_parallel_size", 0},
           {"/layout/pipeline_model_parallel_size", 3},  // 2 layers do not divide over 3 stages
           {"/layout/pipeline_model_parallel_size", "2"},
           {"/layout/virtual_pipeline_model_parallel_size", 4},
           {"/layout/virtual_pipeline_model_parallel_size", -1},
           {"/iteration", "3"},
           {"/iteration", -1},
           {"/layout/zero_stage", 4},
           {"/layout/tensor_model_parallel_size", 0},
           {"/model/hidden_size", 33},
           {"/model/num_layers", 1e12},
           {"/model/num_layers", 16385},
           {"/model/hidden_size", 2097152},
           {"/model/hidden_dropout", 1.5},
           {"/format", "zerotron-checkpoint-1"}}) {
    nlohmann::json bad = meta;
    bad[nlohmann::json::json_pointer(path)] = value;
    EXPECT_THROW(read_layout(bad, "m"), InputError) << path << " = " << value.dump();
  }
}

TEST(CheckpointMeta, ChangedSettingsAreOneLineEach) {
  TrainOptions o;
  const nlohmann::json saved = training_settings(o, 8);
  EXPECT_TRUE(changed_settings(saved, training_settings(o, 8)).empty());
  // The later keys are written only off their defaults: a default run's record is unchanged.
  for (const char* key : {"micro-batch-size", "eval-iters", "lr-warmup-style"})
    EXPECT_FALSE(saved.contains(key)) << key;
  o.lr = 3e-4;
  o.adam_beta2 = 0.95;
  o.micro_batch_size = 4;  // recorded for evaluate, a layout's choice: no line
  o.eval_iters = 7;
  const nlohmann::json now = training_settings(o, 16);
  EXPECT_EQ(now.at("micro-batch-size"), 4);
  EXPECT_EQ(now.at("eval-iters"), 7);
  const auto lines = changed_settings(saved, now);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "--lr was 0.0001 in the checkpoint, this run uses 0.0003"),
            lines.end());
  EXPECT_TRUE(changed_settings(nlohmann::json(), training_settings(o, 8)).empty());
}

}  // namespace
}  // namespace zt
