#pragma once
// A saved checkpoint, read in pieces: any element range of any full (unsharded) tensor, found
// by name in the pipeline stage that holds it and through that stage's tensor-parallel map and
// partition without assembling anything, and
// read from the shard files that hold it through one constant-size block cache. A reshaping
// load, the export and the same-layout load all read through here, so host memory during a read
// is the destination plus BlockCache::kSlots blocks, whatever the model size.
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "src/checkpoint/layout_map.h"
#include "src/checkpoint/meta.h"
#include "src/checkpoint/shard.h"
#include "src/model/gpt_config.h"
#include "src/model/param_layout.h"

namespace zt {

// A tensor of the saved model: its spec under the saved layout (tensor-parallel rank 0's) and
// the pipeline stage whose files hold it.
struct SavedTensor {
  const ParamSpec* spec = nullptr;
  int stage = 0;
};

class SavedCheckpoint {
 public:
  // Checks meta.json's fields (types, ranges, the shard list) before anything is opened; shard
  // files are opened, and their headers checked, on first use.
  SavedCheckpoint(const std::string& iter_dir, const nlohmann::json& meta);

  const GptConfig& model() const { return saved_.model; }
  int tp() const { return saved_.tp; }
  int dp() const { return saved_.dp; }
  int pp() const { return saved_.pp; }
  int ep() const { return saved_.ep; }
  int chunks() const { return saved_.chunks; }
  int first_stage_layers() const { return saved_.first_stage_layers; }
  int last_stage_layers() const { return saved_.last_stage_layers; }
  int stage() const { return saved_.stage; }
  int64_t partition_unit() const { return saved_.partition_unit; }
  // The saved tensor of that (global) name, or null. Each is saved once: "embedding.word" is
  // the first pipeline stage's, which the last stage's tied copy loads from too.
  const SavedTensor* find(const std::string& name) const;
  // Elements of each state section of pipeline stage `pp_rank`'s shard files.
  int64_t section_numel(int pp_rank) const;
  // Elements [f, f + n) of the full tensor `t`, state k (0 master, 1 Adam m, 2 Adam v), into
  // host memory.
  void read_full(const SavedTensor& t, int k, int64_t f, int64_t n, float* dst);
  // Elements [first, first + n) of the shard file of (tp_rank, pp_rank, dp_rank), section k: the
  // same-layout load, straight into place.
  void read_shard(int tp_rank, int pp_rank, int dp_rank, int k, int64_t first, int64_t n,
                  float* dst);
  const LoadAccounting& accounting() const { return acct_; }

 private:
  const ShardReader& reader(int tp_rank, int pp_rank, int dp_rank);
  std::string dir_;
  nlohmann::json shards_;
  CheckpointLayout saved_;
  std::vector<SavedStage> stages_;  // by pipeline rank
  std::map<std::string, SavedTensor> tensors_;
  LoadAccounting acct_;
  BlockCache cache_{acct_};
  std::map<std::tuple<int, int, int>, std::unique_ptr<ShardReader>> readers_;
};

// mp_rank_TT_dp_DDD.bin; with a pipeline (pp > 1) mp_rank_TT_PPP_dp_DDD.bin (Megatron's
// mp_rank_TT_PPP directories, flattened).
std::string shard_file_name(int tp_rank, int dp_rank, int pp_rank = 0, int pp = 1);

}  // namespace zt
