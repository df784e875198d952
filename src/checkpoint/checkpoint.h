#pragma once
// Sharded checkpoints: DIR/iter_NNNNNNN/ holds meta.json (rank 0: model, layout, loop state, the
// reproducibility record, each shard file's size and header checksum) and one shard file per
// rank that owns model states (its fp32 master parameters and Adam moments, checksummed per
// block: shard.h; working parameters are re-derived). DIR/latest names the newest complete
// iteration. With a pipeline every stage's ranks write their stage's files; parameter names are
// global, and the tied word embedding is saved once, as the first stage's (the last stage's copy
// is equal and loads from it: layout_map.h SavedStage).
//
// Atomic: every rank writes into iter_NNNNNNN.tmp/ and fsyncs; only when all have finished does
// rank 0 write meta.json and publish it (directory.h: a crash at any point leaves `latest`
// naming a complete checkpoint). Loading verifies the layout and every block it reads and
// refuses (zerotron: error: naming the file) on any mismatch or truncation.
//
// Save and load work on a CheckpointState: a view of what a checkpoint holds, built by whoever
// runs the training loop.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kernels/backend.h"
#include "src/checkpoint/directory.h"
#include "src/checkpoint/host_staging.h"
#include "src/checkpoint/shard.h"
#include "src/comm/topology.h"
#include "src/model/gpt_config.h"
#include "src/zero/loss_scaler.h"
#include "src/zero/zero_optimizer.h"

namespace zt {

// The loop state a checkpoint carries besides the model states.
struct LoopState {
  int iteration = 0;
  int64_t consumed_valid = 0;
  LossScaler::State scaler{};
};

// A run's states and the settings its checkpoint records, by reference. Save reads it; load
// writes the model states through `optimizer` and returns the loop state to resume from.
struct CheckpointState {
  ZeroOptimizer& optimizer;
  const comm::Topology& topology;
  const GptConfig& model;
  Backend& backend;
  const HostStaging& staging;
  LoopState loop;  // load: the loss scaler kept when the checkpoint has none (an import's)
  int64_t consumed_train_samples = 0;
  int64_t partition_unit = 1;  // --reduce-bucket-size
  int64_t seed = 0;
  int keep_last = 0;        // --keep-last: complete checkpoints kept (0: all)
  nlohmann::json settings;  // the settings the numbers depend on (training_settings)
  // Load: called with the bytes of each piece of model states read (progress lines).
  std::function<void(uint64_t bytes)> read_progress;
};

// Fault-injection points of a save (the failure tests kill a process there).
struct SaveHooks {
  std::function<void()> after_shard;             // each rank, once its shard is on disk
  std::function<void(PublishPoint)> at_publish;  // rank 0, between the steps of publishing
  // Each writing rank, after each piece of its shard: bytes written so far of `total`.
  std::function<void(uint64_t done, uint64_t total)> progress;
};
// Collective over the world. Returns the iteration directory written.
std::string save_checkpoint(const std::string& dir, const CheckpointState& state,
                            const SaveHooks& hooks = {});
// Collective over the world. Loads DIR/latest into `state`'s optimizer. Under the saved layout
// each rank reads its own shard file straight into its states; under another (tp, pp, dp, zero
// stage) each rank reads, for each run of elements it owns, only the byte ranges that hold them
// (through the saved tensor-parallel map and partition), through a constant-size block cache.
// `accounting` receives the loader's own count of the host bytes it held beyond the states and
// the bytes it read. Returns the loop state to resume from.
LoopState load_checkpoint(const std::string& dir, const CheckpointState& state,
                          LoadAccounting* accounting = nullptr);

// The newest complete iteration directory of `dir` and its meta.json (parsed, its iteration
// checked against the directory name).
std::string latest_iteration_dir(const std::string& dir, nlohmann::json& meta);
// The same for a given iteration (nothing: `latest`'s).
std::string checkpoint_iteration_dir(const std::string& dir, std::optional<int64_t> iteration,
                                     nlohmann::json& meta);

}  // namespace zt
