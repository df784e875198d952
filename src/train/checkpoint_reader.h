#pragma once
// A saved checkpoint, read in pieces: any element range of any full (unsharded) tensor, found
// through the saved layout's tensor-parallel map and partition without assembling anything, and
// read from the shard files that hold it through one constant-size block cache. A reshaping
// load, the export and the same-layout load all read through here, so host memory during a read
// is the destination plus BlockCache::kSlots blocks, whatever the model size.
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "src/model/gpt_config.h"
#include "src/model/param_layout.h"
#include "src/train/checkpoint_shard.h"
#include "src/zero/partition.h"

namespace zt {

class SavedCheckpoint {
 public:
  // Checks meta.json's fields (types, ranges, the shard list) before anything is opened; shard
  // files are opened, and their headers checked, on first use.
  SavedCheckpoint(const std::string& iter_dir, const nlohmann::json& meta);

  const GptConfig& model() const { return model_; }
  int tp() const { return tp_; }
  int dp() const { return dp_; }
  int stage() const { return stage_; }
  int64_t partition_unit() const { return unit_; }
  const ParamLayout& layout() const { return layout_; }  // tensor-parallel rank 0's
  // Elements [f, f + n) of the full tensor `p` (this checkpoint's spec of it), state k (0 master,
  // 1 Adam m, 2 Adam v), into host memory.
  void read_full(const ParamSpec& p, int k, int64_t f, int64_t n, float* dst);
  // Elements [first, first + n) of the shard file of (tp_rank, dp_rank), section k: the
  // same-layout load, straight into place.
  void read_shard(int tp_rank, int dp_rank, int k, int64_t first, int64_t n, float* dst);
  const LoadAccounting& accounting() const { return acct_; }

 private:
  const ShardReader& reader(int tp_rank, int dp_rank);
  std::string dir_;
  nlohmann::json shards_;
  GptConfig model_;
  int tp_ = 1, dp_ = 1, stage_ = 0;
  int64_t iteration_ = 0, unit_ = 0;
  ParamLayout layout_;
  std::optional<Partition> part_;  // stages 1-3: the saved partition (the same on every rank)
  LoadAccounting acct_;
  BlockCache cache_{acct_};
  std::map<std::pair<int, int>, std::unique_ptr<ShardReader>> readers_;
};

std::string shard_file_name(int tp_rank, int dp_rank);

}  // namespace zt
