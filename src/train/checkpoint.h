#pragma once
// Sharded checkpoints: DIR/iter_NNNNNNN/ holds meta.json (rank 0: model, layout, loop state,
// one CRC-32 per shard file) and one shard file per rank that owns model states (its fp32
// master parameters and Adam moments; working parameters are re-derived). DIR/latest names the
// newest complete iteration.
//
// Atomic: every rank writes into iter_NNNNNNN.tmp/ and fsyncs; only when all have finished does
// rank 0 write meta.json, rename the directory into place and then move `latest`. A crash
// mid-save leaves the previous checkpoint as `latest`. Loading verifies the layout and every
// checksum and refuses (zerotron: error: naming the file) on any mismatch or truncation.
#include <array>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/train/checkpoint_dir.h"
#include "src/train/checkpoint_file.h"
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
// reads its own shard; under another (tp, dp, zero stage) every rank re-assembles the whole
// tensors from all shards and cuts its own part (optimizer states included). Returns the
// iteration loaded.
int load_checkpoint(const std::string& dir, Trainer& trainer);

// Offline access (zerotron export): the newest complete iteration directory of `dir` and its
// meta.json; the whole (unsharded) master, Adam m and v tensors by name.
struct WholeTensor {
  Shape shape;
  std::array<std::vector<float>, 3> v;  // master, m, v
};
std::string latest_iteration_dir(const std::string& dir, nlohmann::json& meta);
// The same for a given iteration (nothing: `latest`'s).
std::string checkpoint_iteration_dir(const std::string& dir, std::optional<int64_t> iteration,
                                     nlohmann::json& meta);
std::map<std::string, WholeTensor> read_whole_tensors(const std::string& iter_dir,
                                                      const nlohmann::json& meta);
GptConfig config_from_json(const nlohmann::json& model);

}  // namespace zt
