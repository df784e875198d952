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
#include <vector>

#include "kernels/backend.h"
#include "src/checkpoint/directory.h"
#include "src/checkpoint/host_staging.h"
#include "src/checkpoint/shard.h"
#include "src/comm/topology.h"
#include "src/data/sample_skips.h"
#include "src/model/gpt_config.h"
#include "src/zero/loss_scaler.h"
#include "src/zero/zero_optimizer.h"

namespace zt {

// The loop state a checkpoint carries besides the model states.
struct LoopState {
  int iteration = 0;
  int64_t consumed_valid = 0;
  LossScaler::State scaler{};
  // Steps the learning-rate schedule has taken: the updates that were applied (Megatron steps
  // its scheduler only when the update succeeded; an fp16 step skipped for overflow is not one).
  int lr_steps = 0;
  // The seed whose dropout stream the loaded run continues (the checkpoint's); none when the
  // random state was not loaded.
  std::optional<int64_t> seed;
  // Training-stream positions the run leaves out (rewinds, --skip-train-samples).
  data::SampleSkips skipped_train_samples;
  // An imported model's special tokens (meta.json token_ids), kept by every save for export.
  nlohmann::json token_ids;
};

// What a load takes from the checkpoint besides the model's weights (Megatron's --finetune,
// --no-load-optim, --no-load-rng).
struct LoadScope {
  // Adam's moments and step, the loss scaler and the learning-rate schedule's position.
  bool optimizer = true;
  // The iteration and the data streams' positions (false: iteration 0, the first sample).
  bool progress = true;
  // The dropout stream: the checkpoint's seed.
  bool rng = true;
  // The saved iteration to load (--ckpt-step); nothing: the one `latest` names.
  std::optional<int64_t> iteration;
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
// each rank reads its own shard file straight into its states; under another (tp, pp, dp, ep,
// zero stage) each rank reads, for each run of elements it owns, only the byte ranges that hold
// them (through the saved tensor-parallel map and partition), through a constant-size block cache.
// `accounting` receives the loader's own count of the host bytes it held beyond the states and
// the bytes it read. Returns the loop state to resume from.
// `scope` names what is taken besides the weights; what is not taken keeps `state`'s (fresh)
// values. When a rank's reads fail every rank throws that rank's line (InputError), before any
// collective that follows the reads. `scope.iteration` loads that iteration instead of `latest`'s.
LoopState load_checkpoint(const std::string& dir, const CheckpointState& state,
                          LoadAccounting* accounting = nullptr, const LoadScope& scope = {});

// The checks a load makes of the model before reading anything, for a run about to allocate:
// the parameter shapes (layers, hidden size, heads, vocabulary) must be the checkpoint's, and
// --seq-length must not exceed its learned position table; dropout and a shorter sequence may
// change. Throws InputError with one line naming the field; returns one line per allowed change.
std::vector<std::string> check_checkpoint_model(const nlohmann::json& meta, const GptConfig& run,
                                                const std::string& where);

// The newest complete iteration directory of `dir` and its meta.json (parsed, its iteration
// checked against the directory name).
std::string latest_iteration_dir(const std::string& dir, nlohmann::json& meta);
// The same for a given iteration (nothing: `latest`'s); InputError naming the iterations `dir`
// holds when it has no directory for that one.
std::string checkpoint_iteration_dir(const std::string& dir, std::optional<int64_t> iteration,
                                     nlohmann::json& meta);

}  // namespace zt
