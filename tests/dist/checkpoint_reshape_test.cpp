// Streaming reshape: a checkpoint saved under any (tp, zero stage) of the world loads under any
// other, and back, into bitwise the states it started from (master, Adam m and v: the round trip
// S -> T -> S is exact because every element is copied, never computed); while loading, the
// loader's own accounting shows no rank held more host memory than the constant block cache
// (plus the checksum tables), and the memory pool holds exactly the states it held before.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "src/checkpoint/checkpoint.h"
#include "src/comm/topology.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {
namespace fs = std::filesystem;

struct Layout {
  int tp, stage;
};

TrainOptions options(const Layout& l) {
  TrainOptions o = test::small_gpt(0.1, 2);
  o.seq_length = 8;
  o.global_batch_size = dist::world().size();
  o.log_interval = 100;
  o.zero_stage = l.stage;
  o.tensor_model_parallel_size = l.tp;
  o.reduce_bucket_size = 700;  // several partition units per block
  return o;
}

std::vector<std::vector<float>> owned(Trainer& t) {
  std::vector<std::vector<float>> v;
  for (const Tensor& s : t.optimizer().owned_state()) v.emplace_back(s.f32(), s.f32() + s.numel());
  return v;
}

std::string dir_for(const std::string& what) {
  const std::string d =
      dist::scratch_dir() + "zt_reshape_" + std::to_string(dist::world().size()) + "_" + what;
  if (dist::world().rank() == 0) fs::remove_all(d);
  dist::world().barrier();
  return d;
}

// The loader's bound: the block cache, the checksum tables of the files it opened (4 bytes per
// MiB of state) and nothing that grows with the model.
constexpr uint64_t kBound = BlockCache::kSlots * ShardHeader::kBlockBytes + 64 * 1024;

uint64_t load_into(Trainer& t, const std::string& dir) {
  const size_t before = dist::pool().total_current();
  LoadAccounting acct;
  EXPECT_EQ(t.load_checkpoint(dir, &acct), 2);
  EXPECT_EQ(dist::pool().total_current(), before) << "the load allocated from the pool";
  EXPECT_LE(acct.peak, kBound);
  return acct.peak;
}

TEST(CheckpointReshape, EveryLayoutPairRoundTripsBitwiseWithinTheBuffer) {
  const int world = dist::world().size();
  std::vector<Layout> layouts;
  for (int tp : {1, 2, 4})
    if (world % tp == 0)
      for (int stage = 0; stage <= 3; ++stage) layouts.push_back({tp, stage});
  uint64_t peak = 0;
  for (const Layout& s : layouts) {
    const std::string src = dir_for("src"), mid = dir_for("mid"), back = dir_for("back");
    std::vector<std::vector<float>> want;
    {
      comm::Topology topo(dist::world(), s.tp);
      Trainer t(options(s), dist::pool(), topo);
      t.run(false);
      t.save_checkpoint(src);
      want = owned(t);
    }
    for (const Layout& d : layouts) {
      if (d.tp == s.tp && d.stage == s.stage) continue;
      {
        comm::Topology topo(dist::world(), d.tp);
        Trainer t(options(d), dist::pool(), topo);
        peak = std::max(peak, load_into(t, src));
        t.save_checkpoint(mid);
      }
      comm::Topology topo(dist::world(), s.tp);
      Trainer t(options(s), dist::pool(), topo);
      peak = std::max(peak, load_into(t, mid));
      const auto got = owned(t);
      for (size_t k = 0; k < 3; ++k)
        ASSERT_EQ(got[k], want[k]) << "state " << k << ": tp " << s.tp << " stage " << s.stage
                                   << " -> tp " << d.tp << " stage " << d.stage << " -> back";
    }
  }
  if (dist::world().rank() == 0)
    std::printf("reshape: %zu layouts, loader peak %llu bytes (bound %llu)\n", layouts.size(),
                static_cast<unsigned long long>(peak), static_cast<unsigned long long>(kBound));
}

}  // namespace
}  // namespace zt
