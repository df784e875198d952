#pragma once
// Sharded checkpoints: DIR/iter_NNNNNNN/ holds meta.json (rank 0: model, layout, loop state, the
// reproducibility record, each shard file's size and header checksum) and one shard file per
// rank that owns model states (its fp32 master parameters and Adam moments, checksummed per
// block: checkpoint_shard.h; working parameters are re-derived). DIR/latest names the newest
// complete iteration. With a pipeline every stage's ranks write their stage's files; parameter
// names are global, and the tied word embedding is saved once, as the first stage's (the last
// stage's copy is equal and loads from it: checkpoint_map.h SavedStage).
//
// Atomic: every rank writes into iter_NNNNNNN.tmp/ and fsyncs; only when all have finished does
// rank 0 write meta.json and publish it (checkpoint_dir.h: a crash at any point leaves `latest`
// naming a complete checkpoint). Loading verifies the layout and every block it reads and
// refuses (zerotron: error: naming the file) on any mismatch or truncation.
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "src/train/checkpoint_dir.h"
#include "src/train/checkpoint_shard.h"
#include "src/train/trainer.h"

namespace zt {

// Fault-injection points of a save (the failure tests kill a process there).
struct SaveHooks {
  std::function<void()> after_shard;             // each rank, once its shard is on disk
  std::function<void(PublishPoint)> at_publish;  // rank 0, between the steps of publishing
};
// Collective over the world. Returns the iteration directory written.
std::string save_checkpoint(const std::string& dir, Trainer& trainer, const SaveHooks& hooks = {});
// Collective over the world. Loads DIR/latest into `trainer`. Under the saved layout each rank
// reads its own shard file straight into its states; under another (tp, pp, dp, zero stage) each
// rank reads, for each run of elements it owns, only the byte ranges that hold them (through the
// saved tensor-parallel map and partition), through a constant-size block cache. `accounting`
// receives the loader's own count of the host bytes it held beyond the states and the bytes it
// read. Returns the iteration loaded.
int load_checkpoint(const std::string& dir, Trainer& trainer, LoadAccounting* accounting = nullptr);

// The newest complete iteration directory of `dir` and its meta.json (parsed, its iteration
// checked against the directory name).
std::string latest_iteration_dir(const std::string& dir, nlohmann::json& meta);
// The same for a given iteration (nothing: `latest`'s).
std::string checkpoint_iteration_dir(const std::string& dir, std::optional<int64_t> iteration,
                                     nlohmann::json& meta);

}  // namespace zt
