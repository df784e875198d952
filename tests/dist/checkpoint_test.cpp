// Checkpoints on every rank count CTest runs: stopping after step 3 and resuming from its
// checkpoint gives bitwise the losses of an uninterrupted run (every stage, fp32 and bf16, tp 2
// where the world is even); a corrupt, truncated or mismatched checkpoint is refused with an
// error naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/checkpoint/checkpoint.h"
#include "src/comm/topology.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/dist/train_testing.h"

namespace zt {
namespace {
namespace fs = std::filesystem;

TrainOptions small(int stage, bool bf16, int tp) {
  TrainOptions o = test::small_gpt(0.1, 6);  // Megatron's default dropout
  o.global_batch_size = 2 * dist::world().size() / tp;
  o.lr_decay_iters = 6;
  o.lr_warmup_iters = 2;
  o.zero_stage = stage;
  o.bf16 = bf16;
  o.tensor_model_parallel_size = tp;
  o.reduce_bucket_size = 3000;
  o.overlap_comm = true;
  o.param_persistence_threshold = 100;
  return o;
}

std::string dir_for(const std::string& what) {
  return dist::scratch_dir() + "zt_ckpt_" + std::to_string(dist::world().size()) + "_" + what;
}

TEST(Checkpoint, ResumeIsBitwiseTheUninterruptedRun) {
  const int tp = dist::world().size() % 2 == 0 ? 2 : 1;
  for (int stage = 0; stage <= 3; ++stage) {
    for (bool bf16 : {false, true}) {
      const TrainOptions o = small(stage, bf16, tp);
      const std::string dir = dir_for("resume");
      if (dist::world().rank() == 0) fs::remove_all(dir);
      std::vector<double> full, resumed;
      {
        comm::Topology topo(dist::world(), tp);
        Trainer t(o, dist::pool(), topo);
        full = test::lm_losses(t.run(false));
      }
      {
        TrainOptions first = o;
        first.train_iters = 3;
        first.save = dir;
        comm::Topology topo(dist::world(), tp);
        Trainer t(first, dist::pool(), topo);
        t.run(false);
      }
      {
        comm::Topology topo(dist::world(), tp);
        Trainer t(o, dist::pool(), topo);
        EXPECT_EQ(t.load_checkpoint(dir), 3);
        const auto rest = test::lm_losses(t.run(false));
        ASSERT_EQ(rest.size(), 3u);
        for (size_t i = 0; i < 3; ++i)
          EXPECT_EQ(rest[i], full[3 + i])
              << "stage " << stage << (bf16 ? " bf16" : " fp32") << " step " << 4 + i;
      }
    }
  }
}

// Reshaping: a checkpoint saved under one (tp, dp, stage) continues under another with the
// losses the original layout produces, e.g. tp2 x dp2 stage 3 -> tp1 x dp4 stage 1 -> tp4 x dp1
// stage 0 on 4 ranks (fp32; reduction order differs between layouts: 1e-5 relative).
TEST(Checkpoint, ReshapesAcrossLayouts) {
  const int world = dist::world().size();
  struct Layout {
    int tp, stage;
  };
  std::vector<Layout> chain = {{std::min(2, world), 3}, {1, 1}, {world, 0}};
  auto options = [&](const Layout& l) {
    TrainOptions o = small(l.stage, false, l.tp);
    o.global_batch_size = 8;
    o.micro_batch_size = 1;
    return o;
  };
  std::vector<double> ref;
  {
    const TrainOptions o = options(chain[0]);
    comm::Topology topo(dist::world(), o.tensor_model_parallel_size);
    Trainer t(o, dist::pool(), topo);
    ref = test::lm_losses(t.run(false));
  }
  const std::string dir = dir_for("reshape");
  if (dist::world().rank() == 0) fs::remove_all(dir);
  int done = 0;
  for (size_t k = 0; k < chain.size(); ++k) {
    TrainOptions o = options(chain[k]);
    o.train_iters = k + 1 == chain.size() ? 6 : 2 * static_cast<int>(k + 1);
    o.save = dir;
    comm::Topology topo(dist::world(), o.tensor_model_parallel_size);
    Trainer t(o, dist::pool(), topo);
    if (k > 0) {
      EXPECT_EQ(t.load_checkpoint(dir), done);
    }
    const auto l = test::lm_losses(t.run(false));
    for (size_t i = 0; i < l.size(); ++i)
      EXPECT_NEAR(l[i], ref[static_cast<size_t>(done) + i],
                  1e-5 * ref[static_cast<size_t>(done) + i])
          << "tp " << chain[k].tp << " stage " << chain[k].stage << " step " << done + 1 + i;
    done = o.train_iters;
  }
  EXPECT_EQ(done, 6);
}

// A load reads the sizes of every shard file, so every rank's damage is on disk before any rank
// loads, and every load is over before the next damage.
std::string load_error(const TrainOptions& o, const std::string& dir) {
  dist::world().barrier();
  comm::Topology topo(dist::world(), o.tensor_model_parallel_size);
  Trainer t(o, dist::pool(), topo);
  std::string error;
  try {
    t.load_checkpoint(dir);
  } catch (const InputError& e) {
    error = e.what();
  }
  dist::world().barrier();
  return error;
}

TEST(Checkpoint, DamagedOrMismatchedCheckpointsAreRefused) {
  const TrainOptions o = small(2, false, 1);
  const std::string dir = dir_for("damaged");
  if (dist::world().rank() == 0) fs::remove_all(dir);
  {
    TrainOptions first = o;
    first.train_iters = 2;
    first.save = dir;
    comm::Topology topo(dist::world(), 1);
    Trainer t(first, dist::pool(), topo);
    t.run(false);
  }
  dist::world().barrier();
  const fs::path iter = fs::path(dir) / "iter_0000002";
  const fs::path mine =
      iter / ("mp_rank_00_dp_" + fmt::format("{:03d}", dist::world().rank()) + ".bin");
  // Another model.
  TrainOptions other = o;
  other.hidden_size = 64;
  EXPECT_NE(load_error(other, dir).find("holds model"), std::string::npos);
  // One flipped byte in every rank's shard.
  std::vector<char> bytes;
  {
    std::ifstream in(mine, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::vector<char> flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x10;
  std::ofstream(mine, std::ios::binary)
      .write(flipped.data(), static_cast<std::streamsize>(flipped.size()));
  std::string e = load_error(o, dir);
  EXPECT_NE(e.find("is corrupt"), std::string::npos) << e;
  EXPECT_NE(e.find(mine.filename().string()), std::string::npos) << e;
  // Truncated.
  std::ofstream(mine, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  e = load_error(o, dir);
  EXPECT_NE(e.find("is truncated"), std::string::npos) << e;
  // Deleted.
  dist::world().barrier();
  fs::remove(mine);
  e = load_error(o, dir);
  EXPECT_NE(e.find("missing or unreadable"), std::string::npos) << e;
  dist::world().barrier();
}

}  // namespace
}  // namespace zt
