// Checkpoints across pipeline stages: a pp 2 run (tp 1 or 2) stopped and resumed in its layout
// gives bitwise the losses of the uninterrupted pp 2 run; a chain of reshapes tp2 x pp2 (ZeRO 1,
// sequence parallel) -> pp1 (ZeRO 3) -> pp2 split 1 + 3 (ZeRO 1) -> pp4 (ZeRO 0) -> pp2
// interleaved (ZeRO 1) -> pp2 split 3 + 1 (ZeRO 0) continues with the
// losses of one rank training uninterrupted (fp32, relative 1e-5), each load within the
// loader's constant buffer; the two copies of the tied word embedding (first and last stage)
// agree bitwise, so storing the first stage's alone loses nothing; swapped or missing stage
// files and a wrong pipeline size in meta.json are refused with one line naming the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/checkpoint/checkpoint.h"
#include "src/checkpoint/file.h"
#include "src/checkpoint/reader.h"
#include "src/comm/self_communicator.h"
#include "src/comm/topology.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/dist/train_testing.h"

namespace zt {
namespace {
namespace fs = std::filesystem;

struct Layout {
  int tp, pp, chunks, stage;
  bool sequence_parallel = false;
  int first = 0, last = 0;  // --decoder-first/last-pipeline-num-layers
};

std::string name(const Layout& l) {
  return "tp " + std::to_string(l.tp) + " pp " + std::to_string(l.pp) + " chunks " +
         std::to_string(l.chunks) + " stage " + std::to_string(l.stage) +
         (l.sequence_parallel ? " sp" : "") +
         (l.first + l.last > 0
              ? " first " + std::to_string(l.first) + " last " + std::to_string(l.last)
              : "");
}

constexpr int kIters = 8;

// 4 layers, hidden 64, sequence 32, vocabulary 128 (no padding at tp 1, 2 or 4), dropout on,
// global batch 8 of micro-batches of 1, the schedule fixed to kIters steps whatever a segment
// runs.
TrainOptions options(const Layout& l, int train_iters) {
  TrainOptions o = test::small_gpt(0.1, train_iters);
  o.num_layers = 4;
  o.hidden_size = 64;
  o.seq_length = 32;
  o.vocab_size = 128;
  o.lr_decay_iters = kIters;
  o.lr_warmup_iters = 2;
  o.zero_stage = l.stage;
  o.tensor_model_parallel_size = l.tp;
  o.sequence_parallel = l.sequence_parallel;
  test::set_pipeline(o, l.pp, l.chunks);
  o.decoder_first_pipeline_num_layers = l.first;
  o.decoder_last_pipeline_num_layers = l.last;
  o.reduce_bucket_size = 3000;  // several partition units per block
  return o;
}

std::string dir_for(const std::string& what) {
  const std::string d =
      dist::scratch_dir() + "zt_ckpt_pp_" + std::to_string(dist::world().size()) + "_" + what;
  if (dist::world().rank() == 0) fs::remove_all(d);
  dist::world().barrier();
  return d;
}

// The CRC-32 of the tied embedding's master, Adam m and v on every rank that holds a copy
// (stage 0: each state is the whole layout), compared over the world between the first and the
// last stage of each (tp, dp) pipeline.
void expect_tied_copies_agree(Trainer& t, comm::Topology& topo) {
  const ParamLayout& L = t.optimizer().layout();
  const PipelinePart& part = L.pipeline();
  constexpr int kFields = 6;  // three CRC-32s, each in two exact 16-bit halves
  std::vector<float> all(static_cast<size_t>(topo.world_size() * kFields), 0.0f);
  float* mine = all.data() + topo.rank() * kFields;
  const bool holds = part.first() || part.last();
  if (holds) {
    const ParamSpec& p = L.find("embedding.word");  // the first stage's, or the last's copy
    const std::vector<Tensor> state = t.optimizer().owned_state();
    for (int k = 0; k < 3; ++k) {
      const uint32_t crc =
          crc32(state[static_cast<size_t>(k)].f32() + p.offset, static_cast<size_t>(p.numel()) * 4);
      mine[2 * k] = static_cast<float>(crc >> 16);
      mine[2 * k + 1] = static_cast<float>(crc & 0xffffu);
    }
  }
  topo.world().all_gather(Tensor(all.data(), {topo.world_size() * kFields}, DType::F32));
  if (!part.last()) return;
  const int first = topo.grid().rank_of({topo.tp_rank(), topo.dp_rank(), 0});
  for (int k = 0; k < kFields; ++k)
    EXPECT_EQ(all[static_cast<size_t>(first * kFields + k)], mine[k])
        << "state " << k / 2 << ": the tied embedding's copies differ on rank " << topo.rank();
}

TEST(CheckpointPipeline, SameLayoutResumeIsBitwise) {
  for (const Layout& l : {Layout{1, 2, 1, 1}, Layout{1, 2, 2, 0}, Layout{2, 2, 1, 1, true}}) {
    if (dist::world().size() % (l.tp * l.pp) != 0) continue;
    std::vector<double> full;
    {
      comm::Topology topo(dist::world(), l.tp, l.pp);
      Trainer t(options(l, 6), dist::pool(), topo);
      full = test::lm_losses(t.run(false));
      if (l.stage == 0) expect_tied_copies_agree(t, topo);
    }
    const std::string dir = dir_for("resume");
    {
      TrainOptions o = options(l, 3);
      o.save = dir;
      comm::Topology topo(dist::world(), l.tp, l.pp);
      Trainer t(o, dist::pool(), topo);
      t.run(false);
    }
    comm::Topology topo(dist::world(), l.tp, l.pp);
    Trainer t(options(l, 6), dist::pool(), topo);
    EXPECT_EQ(t.load_checkpoint(dir), 3);
    const auto rest = test::lm_losses(t.run(false));
    ASSERT_EQ(rest.size(), 3u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(rest[i], full[3 + i]) << name(l) << " step " << 4 + i;
  }
}

TEST(CheckpointPipeline, ReshapesAcrossPipelineSizes) {
  const int world = dist::world().size();
  std::vector<Layout> chain;
  for (const Layout& l :
       {Layout{2, 2, 1, 1, true}, Layout{1, 1, 1, 3}, Layout{1, 2, 1, 1, false, 1, 0},
        Layout{1, 4, 1, 0}, Layout{1, 2, 2, 1}, Layout{1, 2, 1, 0, false, 0, 1}})
    if (world % (l.tp * l.pp) == 0) chain.push_back(l);
  ASSERT_GE(chain.size(), 2u);
  // The reference: this rank alone, uninterrupted, in its own pool.
  std::vector<double> ref;
  {
    MemoryPool local(make_host_allocator());
    comm::SelfWorld alone;
    Trainer t(options({1, 1, 1, 0}, kIters), local, alone.topology());
    ref = test::lm_losses(t.run(false));
  }
  const std::string dir = dir_for("reshape");
  const int per = kIters / static_cast<int>(chain.size());
  int done = 0;
  double worst = 0;
  uint64_t peak = 0;
  for (size_t k = 0; k < chain.size(); ++k) {
    TrainOptions o = options(chain[k], k + 1 == chain.size() ? kIters : done + per);
    o.save = dir;
    comm::Topology topo(dist::world(), chain[k].tp, chain[k].pp);
    Trainer t(o, dist::pool(), topo);
    if (k > 0) {
      // The loader's bound (checkpoint_reshape_test.cpp): the block cache and the checksum tables
      // of the files it opened, nothing from the pool.
      const size_t before = dist::pool().total_current();
      LoadAccounting acct;
      EXPECT_EQ(t.load_checkpoint(dir, &acct), done);
      EXPECT_EQ(dist::pool().total_current(), before) << "the load allocated from the pool";
      EXPECT_LE(acct.peak, BlockCache::kSlots * ShardHeader::kBlockBytes + 64 * 1024);
      peak = std::max(peak, acct.peak);
    }
    const auto l = test::lm_losses(t.run(false));
    EXPECT_EQ(static_cast<int>(l.size()), o.train_iters - done);
    for (size_t i = 0; i < l.size(); ++i) {
      const double want = ref[static_cast<size_t>(done) + i];
      worst = std::max(worst, std::abs(l[i] - want) / want);
      EXPECT_NEAR(l[i], want, 1e-5 * want) << name(chain[k]) << " step " << done + 1 + i;
    }
    done = o.train_iters;
  }
  EXPECT_EQ(done, kIters);
  if (dist::world().rank() == 0) {
    std::string names;
    for (const Layout& l : chain) names += (names.empty() ? "" : " -> ") + name(l);
    std::printf(
        "pipeline reshape %s: %d steps, max relative loss difference %.3g, loader peak "
        "%llu bytes\n",
        names.c_str(), kIters, worst, static_cast<unsigned long long>(peak));
  }
}

// One rank alone loading into one process (no collectives, so each rank meets its own error):
// the error, or nothing.
std::string solo_load_error(const std::string& dir) {
  MemoryPool local(make_host_allocator());
  comm::SelfWorld alone;
  Trainer t(options({1, 1, 1, 0}, kIters), local, alone.topology());
  try {
    t.load_checkpoint(dir);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Damage rank 0 makes while every rank waits; each rank's load error; the damage undone.
std::string error_after(const std::function<void()>& damage, const std::function<void()>& undo,
                        const std::string& dir) {
  dist::world().barrier();  // no rank still loading the undamaged files
  if (dist::world().rank() == 0) damage();
  dist::world().barrier();
  const std::string e = solo_load_error(dir);
  dist::world().barrier();
  if (dist::world().rank() == 0) {
    std::printf("refused: %s\n", e.c_str());
    undo();
  }
  dist::world().barrier();
  return e;
}

TEST(CheckpointPipeline, DamagedStageFilesAreRefused) {
  const Layout l{1, 2, 1, 1};
  if (dist::world().size() % 2 != 0) GTEST_SKIP() << "pp 2 needs an even world";
  const std::string dir = dir_for("damage");
  {
    TrainOptions o = options(l, 2);
    o.save = dir;
    comm::Topology topo(dist::world(), l.tp, l.pp);
    Trainer t(o, dist::pool(), topo);
    t.run(false);
  }
  EXPECT_EQ(solo_load_error(dir), "");  // undamaged, it loads into one process
  const fs::path it = fs::path(dir) / "iter_0000002";
  const fs::path first = it / shard_file_name(0, 0, 0, 2), last = it / shard_file_name(0, 0, 1, 2);
  const fs::path aside = it / "aside";
  auto swap = [&] {
    fs::rename(first, aside);
    fs::rename(last, first);
    fs::rename(aside, last);
  };
  std::string e = error_after(swap, swap, dir);
  EXPECT_TRUE(e.find(first.string()) != std::string::npos ||
              e.find(last.string()) != std::string::npos)
      << "swapped stage files: " << e;
  e = error_after([&] { fs::rename(last, aside); }, [&] { fs::rename(aside, last); }, dir);
  EXPECT_NE(e.find(last.filename().string()), std::string::npos) << "missing stage file: " << e;
  const fs::path meta = it / "meta.json";
  const fs::path kept = it / "meta.kept";
  e = error_after(
      [&] {
        fs::copy_file(meta, kept);
        nlohmann::json m = nlohmann::json::parse(std::ifstream(meta));
        m["layout"]["pipeline_model_parallel_size"] = 4;
        std::ofstream(meta, std::ios::trunc) << m.dump(2);
      },
      [&] { fs::rename(kept, meta); }, dir);
  EXPECT_NE(e.find("the layout (tp 1, pp 4"), std::string::npos) << "pp 4 in meta.json: " << e;
  EXPECT_EQ(solo_load_error(dir), "");  // every damage undone
}

}  // namespace
}  // namespace zt
