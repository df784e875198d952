// Checkpoints under expert parallelism (docs/design/checkpoints.md, Expert parallelism): the
// experts split over ep ranks of the data-parallel group, their states partitioned over the dp /
// ep ranks holding the same experts. Stopping after step 3 and resuming in the same layout gives
// bitwise the uninterrupted run's losses (ep 2, ZeRO 0, 1 and 3); a checkpoint saved at one
// (tp, ep, dp, stage) continues at another with the original layout's losses; every state
// round-trips bitwise through another expert split and back; and what export reads of an ep 2
// checkpoint is, element for element, the live model's full tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/checkpoint/checkpoint.h"
#include "src/checkpoint/reader.h"
#include "src/comm/topology.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/dist/train_testing.h"

namespace zt {
namespace {
namespace fs = std::filesystem;

struct Layout {
  int tp = 1, ep = 1, stage = 0;
};

std::string name(const Layout& l) {
  return fmt::format("tp {} ep {} dp {} stage {}", l.tp, l.ep, dist::world().size() / l.tp,
                     l.stage);
}

bool fits(const Layout& l) {
  const int world = dist::world().size();
  return world % l.tp == 0 && (world / l.tp) % l.ep == 0;
}

// The layout tests' small MoE (test::small_moe) at layout `l`.
TrainOptions small_moe(const Layout& l, double dropout, int iters) {
  TrainOptions o = test::small_moe(dropout, iters);
  o.lr_warmup_iters = 2;
  o.lr_decay_iters = iters;
  o.reduce_bucket_size = 700;  // several partition units per block, experts' cut over edp
  o.tensor_model_parallel_size = l.tp;
  o.expert_model_parallel_size = l.ep;
  o.zero_stage = l.stage;
  return o;
}

comm::Topology topology(const Layout& l) {
  return comm::Topology(dist::world(), l.tp, 1, nullptr, 1, l.ep);
}

std::string dir_for(const std::string& what) {
  const std::string d =
      dist::scratch_dir() + "zt_ckpt_expert_" + std::to_string(dist::world().size()) + "_" + what;
  if (dist::world().rank() == 0) fs::remove_all(d);
  dist::world().barrier();
  return d;
}

TEST(CheckpointExpert, ResumeIsBitwiseTheUninterruptedRun) {
  for (int stage : {0, 1, 3}) {
    const Layout l{1, 2, stage};
    const TrainOptions o = small_moe(l, 0.1, 6);
    const std::string dir = dir_for("resume");
    std::vector<double> full;
    {
      comm::Topology topo = topology(l);
      Trainer t(o, dist::pool(), topo);
      full = test::lm_losses(t.run(false));
    }
    {
      TrainOptions first = o;
      first.train_iters = 3;
      first.save = dir;
      comm::Topology topo = topology(l);
      Trainer t(first, dist::pool(), topo);
      t.run(false);
    }
    if (dist::world().rank() == 0) {
      // Stage 0 writes one file per ep rank, stages 1-3 one per dp rank.
      nlohmann::json meta;
      latest_iteration_dir(dir, meta);
      EXPECT_EQ(meta["layout"]["expert_model_parallel_size"], 2) << name(l);
      EXPECT_EQ(meta["shards"].size(), stage == 0 ? 2u : static_cast<size_t>(dist::world().size()))
          << name(l);
    }
    comm::Topology topo = topology(l);
    Trainer t(o, dist::pool(), topo);
    EXPECT_EQ(t.load_checkpoint(dir), 3);
    const auto rest = test::lm_losses(t.run(false));
    ASSERT_EQ(rest.size(), 3u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(rest[i], full[3 + i]) << name(l) << " step " << 4 + i;
  }
}

// Saved as ep 2 (ZeRO 3), continued as ep 1 (ZeRO 1), as ep = dp (ZeRO 0), then as tp 2 with
// the largest ep its dp allows (ZeRO 1): every step within the reshape tolerance (1e-5
// relative) of the first layout's uninterrupted run.
TEST(CheckpointExpert, ReshapesAcrossExpertLayouts) {
  const int world = dist::world().size();
  const std::vector<Layout> chain = {{1, 2, 3}, {1, 1, 1}, {1, world, 0}, {2, world / 2, 1}};
  auto options = [](const Layout& l, int iters) {
    TrainOptions o = small_moe(l, 0.0, iters);
    o.micro_batch_size = 1;
    return o;
  };
  std::vector<double> ref;
  {
    comm::Topology topo = topology(chain[0]);
    Trainer t(options(chain[0], 8), dist::pool(), topo);
    ref = test::lm_losses(t.run(false));
  }
  const std::string dir = dir_for("reshape");
  int done = 0;
  for (size_t k = 0; k < chain.size(); ++k) {
    ASSERT_TRUE(fits(chain[k])) << name(chain[k]);
    TrainOptions o = options(chain[k], 8);
    o.train_iters = 2 * static_cast<int>(k + 1);
    o.save = dir;
    comm::Topology topo = topology(chain[k]);
    Trainer t(o, dist::pool(), topo);
    if (k > 0) {
      EXPECT_EQ(t.load_checkpoint(dir), done);
    }
    const auto l = test::lm_losses(t.run(false));
    ASSERT_EQ(l.size(), 2u) << name(chain[k]);
    for (size_t i = 0; i < l.size(); ++i)
      EXPECT_NEAR(l[i], ref[static_cast<size_t>(done) + i],
                  1e-5 * ref[static_cast<size_t>(done) + i])
          << name(chain[k]) << " step " << done + 1 + i;
    done = o.train_iters;
  }
  EXPECT_EQ(done, 8);
}

std::vector<std::vector<float>> owned(Trainer& t) {
  std::vector<std::vector<float>> v;
  for (const Tensor& s : t.optimizer().owned_state()) v.emplace_back(s.f32(), s.f32() + s.numel());
  return v;
}

// S -> T -> S copies every element of the master and both moments, so it is exact; with the
// expert split changing on the way, an expert read from another ep rank's stack or part shows.
TEST(CheckpointExpert, StatesRoundTripBitwiseThroughAnotherExpertSplit) {
  const int world = dist::world().size();
  const std::vector<std::pair<Layout, Layout>> pairs = {
      {{1, 2, 1}, {1, 1, 3}},     {{1, 2, 0}, {1, 1, 0}},     {{1, 2, 3}, {2, 1, 1}},
      {{1, world, 0}, {1, 2, 3}}, {{1, world, 3}, {1, 1, 0}}, {{1, 1, 1}, {1, world, 1}}};
  for (const auto& [s, d] : pairs) {
    const std::string src = dir_for("src"), mid = dir_for("mid"), back = dir_for("back");
    std::vector<std::vector<float>> want;
    {
      comm::Topology topo = topology(s);
      Trainer t(small_moe(s, 0.0, 2), dist::pool(), topo);
      t.run(false);
      t.save_checkpoint(src);
      want = owned(t);
    }
    {
      comm::Topology topo = topology(d);
      Trainer t(small_moe(d, 0.0, 2), dist::pool(), topo);
      EXPECT_EQ(t.load_checkpoint(src), 2);
      t.save_checkpoint(mid);
    }
    comm::Topology topo = topology(s);
    Trainer t(small_moe(s, 0.0, 2), dist::pool(), topo);
    EXPECT_EQ(t.load_checkpoint(mid), 2);
    const auto got = owned(t);
    for (size_t k = 0; k < 3; ++k)
      ASSERT_EQ(got[k], want[k]) << "state " << k << ": " << name(s) << " -> " << name(d)
                                 << " -> back";
  }
}

// What export (and generate) read: every element of every full tensor, here each rank's own
// experts and the dense parameters, equals the live model's master, at ZeRO 0 and 3.
TEST(CheckpointExpert, FullTensorsAreTheLiveModels) {
  for (int stage : {0, 3}) {
    const Layout l{1, 2, stage};
    const std::string dir = dir_for("export");
    comm::Topology topo = topology(l);
    Trainer t(small_moe(l, 0.0, 2), dist::pool(), topo);
    t.run(false);
    const std::string iter_dir = t.save_checkpoint(dir);
    const ParamLayout& layout = t.optimizer().layout();
    std::vector<float> master(static_cast<size_t>(layout.numel()));
    t.optimizer().gather_master(master.data());
    nlohmann::json meta;
    latest_iteration_dir(dir, meta);
    SavedCheckpoint saved(iter_dir, meta);
    int64_t experts = 0;
    for (const ParamSpec& p : layout.params()) {
      const SavedTensor* st = saved.find(p.name);
      ASSERT_NE(st, nullptr) << p.name;
      ASSERT_EQ(st->spec->full_shape, p.full_shape) << p.name;
      std::vector<float> full(static_cast<size_t>(p.full_numel()));
      saved.read_full(*st, 0, 0, p.full_numel(), full.data());
      for (int64_t i = 0; i < p.numel(); ++i)
        ASSERT_EQ(full[static_cast<size_t>(p.full_index(i))],
                  master[static_cast<size_t>(p.offset + i)])
            << p.name << " element " << i << " of ep rank " << layout.ep_rank() << ", " << name(l);
      if (p.expert) experts += p.numel();
    }
    EXPECT_GT(experts, 0);
    dist::world().barrier();
  }
}

}  // namespace
}  // namespace zt
