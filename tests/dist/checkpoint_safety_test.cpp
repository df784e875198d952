// Saves that cannot lose the last good checkpoint, one test per data-loss case that
// does not need a killed process (those are in checkpoint_safety.sh): --keep-last after a
// mistyped --load, iteration numbers across a digit boundary, stale .tmp directories, re-saving
// the iteration `latest` names, two jobs on one directory, a hostile `latest` and a symbolic
// link as an iteration directory.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/checkpoint/checkpoint.h"
#include "src/comm/topology.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"

namespace zt {
namespace {
namespace fs = std::filesystem;

TrainOptions small(int keep_last) {
  TrainOptions o;
  o.num_layers = 1;
  o.hidden_size = 16;
  o.num_attention_heads = 2;
  o.seq_length = 8;
  o.vocab_size = 32;
  o.make_vocab_size_divisible_by = 16;
  o.micro_batch_size = 1;
  o.train_iters = 2;
  o.mock_data = true;
  o.zero_stage = 1;
  o.reduce_bucket_size = 500;
  o.keep_last = keep_last;
  return o;
}

std::string fresh_dir(const std::string& what) {
  const std::string d =
      dist::scratch_dir() + "zt_safety_" + std::to_string(dist::world().size()) + "_" + what;
  if (dist::world().rank() == 0) fs::remove_all(d);
  dist::world().barrier();
  return d;
}

// A trainer standing at `iteration` (its states are those of step 0; only the record matters).
void save_at(const TrainOptions& o, const std::string& dir, int iteration) {
  comm::Topology topo(dist::world(), 1);
  Trainer t(o, dist::pool(), topo);
  Trainer::LoopState s = t.loop_state();
  s.iteration = iteration;
  t.restore_loop_state(s);
  t.save_checkpoint(dir);
}

std::vector<std::string> iterations_in(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with("iter_")) v.push_back(e.path().filename());
  std::sort(v.begin(), v.end());
  return v;
}

// What a load of `dir` under `o` refuses with (InputError's line), or "" when it loads.
std::string load_refusal(const TrainOptions& o, const std::string& dir) {
  comm::Topology topo(dist::world(), 1);
  Trainer t(o, dist::pool(), topo);
  try {
    t.load_checkpoint(dir);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string latest_of(const std::string& dir) {
  std::string s;
  std::ifstream(fs::path(dir) / "latest") >> s;
  return s;
}

// A new run (the --load was mistyped, so it starts at 0) saves iterations 10 and 20 into a
// directory whose `latest` is 100: --keep-last must keep the two new ones, and 100 too.
TEST(CheckpointSafety, KeepLastAfterMistypedLoadKeepsTheNewCheckpoints) {
  const std::string dir = fresh_dir("mistyped");
  save_at(small(2), dir, 100);
  save_at(small(2), dir, 10);
  save_at(small(2), dir, 20);
  dist::world().barrier();
  EXPECT_EQ(iterations_in(dir),
            (std::vector<std::string>{"iter_0000010", "iter_0000020", "iter_0000100"}));
  EXPECT_EQ(latest_of(dir), "iter_0000020");
  // keep-last 1: the one older than `latest` goes; `latest`'s target and the newer 100 stay.
  save_at(small(1), dir, 30);
  dist::world().barrier();
  EXPECT_EQ(iterations_in(dir), (std::vector<std::string>{"iter_0000030", "iter_0000100"}));
}

// Past iteration 9,999,999 the name gains a digit and sorts before the older ones: pruning by
// name would delete the newest checkpoint.
TEST(CheckpointSafety, KeepLastAcrossADigitBoundaryKeepsTheNewest) {
  const std::string dir = fresh_dir("digits");
  save_at(small(1), dir, 9'999'998);
  save_at(small(1), dir, 9'999'999);
  save_at(small(1), dir, 10'000'000);
  dist::world().barrier();
  EXPECT_EQ(iterations_in(dir), (std::vector<std::string>{"iter_10000000"}));
  EXPECT_EQ(latest_of(dir), "iter_10000000");
  comm::Topology topo(dist::world(), 1);
  Trainer t(small(1), dist::pool(), topo);
  EXPECT_EQ(t.load_checkpoint(dir), 10'000'000);
}

// A save killed half-way leaves iter_N.tmp/ (and perhaps latest.tmp): the next save removes
// them, whatever their iteration, and succeeds.
TEST(CheckpointSafety, StaleTmpIsRemovedAtTheNextSave) {
  const std::string dir = fresh_dir("stale");
  if (dist::world().rank() == 0) {
    for (const char* d : {"iter_0000002.tmp", "iter_0000007.tmp"}) {
      fs::create_directories(fs::path(dir) / d / "junk");
      std::ofstream(fs::path(dir) / d / "mp_rank_00_dp_000.bin") << "partial";
    }
    std::ofstream(fs::path(dir) / "latest.tmp") << "iter_00";
    std::ofstream(fs::path(dir) / "notes.tmp") << "not a checkpoint's: left alone";
  }
  dist::world().barrier();
  save_at(small(0), dir, 2);
  dist::world().barrier();
  EXPECT_EQ(iterations_in(dir), (std::vector<std::string>{"iter_0000002"}));
  EXPECT_FALSE(fs::exists(fs::path(dir) / "latest.tmp"));
  EXPECT_TRUE(fs::exists(fs::path(dir) / "notes.tmp"));
  comm::Topology topo(dist::world(), 1);
  Trainer t(small(0), dist::pool(), topo);
  EXPECT_EQ(t.load_checkpoint(dir), 2);
}

// Re-saving the iteration `latest` names (a run resumed with --load ck --save ck at its last
// iteration) replaces it with the new states and leaves nothing beside it.
TEST(CheckpointSafety, ResavingLatestsIterationReplacesItInPlace) {
  const std::string dir = fresh_dir("resave");
  TrainOptions o = small(0);
  o.save = dir;
  std::vector<float> trained;
  {
    comm::Topology topo(dist::world(), 1);
    Trainer t(o, dist::pool(), topo);
    t.run(false);  // saves iteration 2
  }
  {
    comm::Topology topo(dist::world(), 1);
    Trainer t(o, dist::pool(), topo);
    ASSERT_EQ(t.load_checkpoint(dir), 2);
    trained.resize(static_cast<size_t>(t.optimizer().layout().numel()));
    t.optimizer().gather_master(trained.data());
  }
  save_at(small(0), dir, 2);  // iteration 2 again, with the untrained initial states
  dist::world().barrier();
  EXPECT_EQ(iterations_in(dir), (std::vector<std::string>{"iter_0000002"}));
  comm::Topology topo(dist::world(), 1);
  Trainer t(small(0), dist::pool(), topo);
  std::vector<float> initial(trained.size()), loaded(trained.size());
  t.optimizer().gather_master(initial.data());
  ASSERT_EQ(t.load_checkpoint(dir), 2);
  t.optimizer().gather_master(loaded.data());
  EXPECT_EQ(loaded, initial);
  EXPECT_NE(loaded, trained);
}

TEST(CheckpointSafety, ASecondJobOnTheSameDirectoryIsRefused) {
  if (dist::world().rank() != 0) return;
  const std::string dir =
      dist::scratch_dir() + "zt_safety_lock_" + std::to_string(dist::world().size());
  prepare_save_dir(dir);
  CheckpointLock first(dir);
  try {
    CheckpointLock second(dir);
    ADD_FAILURE() << "a second lock on one directory was granted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is in use by another job (pid"), std::string::npos)
        << e.what();
  }
}

TEST(CheckpointSafety, UnwritableSaveIsRefusedUpFront) {
  if (dist::world().rank() != 0) return;
  const std::string file =
      dist::scratch_dir() + "zt_safety_a_file_" + std::to_string(dist::world().size());
  std::ofstream(file) << "x";
  try {
    prepare_save_dir(file + "/ck");
    ADD_FAILURE() << "a --save below a regular file was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create the directory"), std::string::npos)
        << e.what();
  }
}

// `latest` must name an iteration directory inside the checkpoint directory.
TEST(CheckpointSafety, HostileLatestIsRefused) {
  const std::string dir = fresh_dir("hostile");
  save_at(small(0), dir, 1);
  for (const char* bad : {"../../etc", "/etc/passwd", "iter_01", "iter_0000001/../x"}) {
    dist::world().barrier();
    if (dist::world().rank() == 0) std::ofstream(fs::path(dir) / "latest") << bad << "\n";
    dist::world().barrier();
    comm::Topology topo(dist::world(), 1);
    Trainer t(small(0), dist::pool(), topo);
    try {
      t.load_checkpoint(dir);
      ADD_FAILURE() << "latest = " << bad << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("must name an iteration directory"), std::string::npos)
          << e.what();
    }
  }
  // Nor anything but a regular file: a FIFO (which no writer opens: a blocking open would hang
  // the load) and a link that loops are refused with one line.
  const fs::path latest = fs::path(dir) / "latest";
  const std::pair<std::function<void()>, std::string> plants[] = {
      {[&] { ::mkfifo(latest.c_str(), 0644); }, "is not a regular file (a FIFO)"},
      {[&] { fs::create_symlink("latest", latest); }, "is a symbolic link"},
  };
  for (const auto& [plant, want] : plants) {
    dist::world().barrier();
    if (dist::world().rank() == 0) {
      fs::remove(latest);
      plant();
    }
    dist::world().barrier();
    const std::string e = load_refusal(small(0), dir);
    EXPECT_NE(e.find(want), std::string::npos) << "wanted: " << want << ", got: " << e;
  }
  dist::world().barrier();
  if (dist::world().rank() == 0) {
    fs::remove(latest);
    std::ofstream(latest) << "iter_0000001\n";
  }
  dist::world().barrier();
}

// An iteration directory may be a symbolic link (an old iteration moved to another disk): the
// load follows it, and checks its content as any other's.
TEST(CheckpointSafety, SymlinkedIterationLoads) {
  const std::string dir = fresh_dir("symlinked");
  save_at(small(0), dir, 1);
  const fs::path elsewhere = fs::path(dir + "_elsewhere");
  if (dist::world().rank() == 0) {
    fs::remove_all(elsewhere);
    fs::rename(fs::path(dir) / "iter_0000001", elsewhere);
    fs::create_directory_symlink(elsewhere, fs::path(dir) / "iter_0000001");
  }
  dist::world().barrier();
  {
    comm::Topology topo(dist::world(), 1);
    Trainer t(small(0), dist::pool(), topo);
    EXPECT_EQ(t.load_checkpoint(dir), 1);
  }
  // Re-saving that iteration puts a directory in place of the link; the target is left as it was.
  const auto files_in = [](const fs::path& d) {
    return std::distance(fs::directory_iterator(d), fs::directory_iterator());
  };
  const auto target_files = files_in(elsewhere);
  save_at(small(0), dir, 1);
  dist::world().barrier();
  EXPECT_FALSE(fs::is_symlink(fs::path(dir) / "iter_0000001"));
  EXPECT_TRUE(fs::is_regular_file(fs::path(dir) / "iter_0000001" / "meta.json"));
  EXPECT_EQ(files_in(elsewhere), target_files);
  // --keep-last prunes the link, never the files of its target.
  dist::world().barrier();
  if (dist::world().rank() == 0) {
    fs::remove_all(fs::path(dir) / "iter_0000001");
    fs::create_directory_symlink(elsewhere, fs::path(dir) / "iter_0000001");
  }
  dist::world().barrier();
  save_at(small(1), dir, 5);
  dist::world().barrier();
  EXPECT_EQ(iterations_in(dir), (std::vector<std::string>{"iter_0000005"}));
  EXPECT_TRUE(fs::is_regular_file(elsewhere / "meta.json"));
  // --ckpt-step of an iteration the directory does not hold names those it does.
  TrainOptions step3 = small(0);
  step3.ckpt_step = 3;
  std::string e = load_refusal(step3, dir);
  EXPECT_NE(e.find("has no iteration 3; it holds iteration 5"), std::string::npos) << e;
  // A link to a directory holding another iteration is refused by its meta.json.
  dist::world().barrier();
  if (dist::world().rank() == 0) {
    fs::create_directory_symlink(elsewhere, fs::path(dir) / "iter_0000002");
    std::ofstream(fs::path(dir) / "latest") << "iter_0000002\n";
  }
  dist::world().barrier();
  e = load_refusal(small(0), dir);
  EXPECT_NE(e.find("does not record iteration iter_0000002"), std::string::npos) << e;
  dist::world().barrier();
}

// meta.json is read with the shared bounded JSON reader and every field's type is checked: a
// deeply nested value (dumped into a warning, it overflowed the stack), a format of the wrong
// type or a missing section each end in one InputError, never a crash or a library exception.
TEST(CheckpointSafety, HostileMetaJsonIsRefused) {
  const std::string dir = fresh_dir("hostile_meta");
  save_at(small(0), dir, 1);
  const fs::path meta_path = fs::path(dir) / "iter_0000001" / "meta.json";
  nlohmann::json meta;
  std::ifstream(meta_path) >> meta;
  auto with = [&](auto&& edit) {
    nlohmann::json m = meta;
    return edit(m);
  };
  const std::string deep = std::string(100000, '[') + "1" + std::string(100000, ']');
  const std::pair<std::string, std::string> cases[] = {
      {with([&](nlohmann::json& m) {
         m.erase("settings");
         return "{\"settings\": {\"lr\": " + deep + "}, " + m.dump().substr(1);
       }),
       "nests deeper than 8 levels"},
      {with([](nlohmann::json& m) {
         m["format"] = 5;
         return m.dump();
       }),
       "is not a zerotron-checkpoint-3 meta.json"},
      {with([](nlohmann::json& m) {
         m.erase("model");
         return m.dump();
       }),
       "has no model"},
      {with([](nlohmann::json& m) {
         m.erase("shards");
         return m.dump();
       }),
       "lists no shard files"},
  };
  for (const auto& [text, want] : cases) {
    dist::world().barrier();
    if (dist::world().rank() == 0) std::ofstream(meta_path, std::ios::trunc) << text;
    dist::world().barrier();
    comm::Topology topo(dist::world(), 1);
    Trainer t(small(0), dist::pool(), topo);
    try {
      t.load_checkpoint(dir);
      ADD_FAILURE() << "accepted; wanted: " << want;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  dist::world().barrier();
}

}  // namespace
}  // namespace zt
