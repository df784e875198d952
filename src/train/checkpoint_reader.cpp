#include "src/train/checkpoint_reader.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "src/core/error.h"
#include "src/train/checkpoint_file.h"
#include "src/train/checkpoint_map.h"
#include "src/train/checkpoint_meta.h"

namespace zt {
namespace fs = std::filesystem;

std::string shard_file_name(int tp_rank, int dp_rank) {
  return fmt::format("mp_rank_{:02d}_dp_{:03d}.bin", tp_rank, dp_rank);
}

SavedCheckpoint::SavedCheckpoint(const std::string& iter_dir, const nlohmann::json& meta)
    : dir_(iter_dir) {
  const std::string where = (fs::path(iter_dir) / "meta.json").string();
  const SavedLayout saved = saved_layout(meta, where);
  model_ = saved.model;
  tp_ = saved.tp;
  dp_ = saved.dp;
  stage_ = saved.stage;
  iteration_ = saved.iteration;
  unit_ = saved.partition_unit;
  ZT_REQUIRE(meta.contains("shards"), "'{}' lists no shard files", where);
  shards_ = meta["shards"];
  // Exactly the files this layout writes: one per tp rank (stage 0) or per (tp, dp) rank.
  const int files_dp = stage_ == 0 ? 1 : dp_;
  ZT_REQUIRE(shards_.is_object() && shards_.size() == static_cast<size_t>(tp_ * files_dp),
             "'{}' lists {} shard files, the layout (tp {}, dp {}, stage {}) writes {}", where,
             shards_.is_object() ? shards_.size() : 0, tp_, dp_, stage_, tp_ * files_dp);
  for (int r = 0; r < tp_; ++r)
    for (int d = 0; d < files_dp; ++d) {
      const std::string name = shard_file_name(r, d);
      ZT_REQUIRE(shards_.contains(name), "'{}' lists no shard '{}'", where, name);
      const auto& e = shards_[name];
      ZT_REQUIRE(e.is_object() && e.contains("header_crc32") &&
                     e["header_crc32"].is_number_unsigned() &&
                     e["header_crc32"].get<uint64_t>() <= 0xffffffffu,
                 "'{}': the entry of '{}' needs an unsigned 32-bit header_crc32", where, name);
    }
  // The layout and the partition are built from the model, so a model larger than the data on
  // disk is refused first: what a load builds and reads is bounded by the files' size. The
  // bound is loose on purpose (4 bytes a parameter, its fp32 master alone, of the 12 the files
  // hold): a shard that is merely short is named by its own check when it is opened.
  uint64_t on_disk = 0;
  for (const auto& [name, entry] : shards_.items()) {
    uint64_t size = 0;
    open_checkpoint_file(dir_, name, std::numeric_limits<uint64_t>::max(), size);
    on_disk += size;
  }
  const int64_t params = model_.num_parameters();
  ZT_REQUIRE(4.0 * static_cast<double>(params) <= static_cast<double>(on_disk),
             "checkpoint '{}' is truncated: its shard files hold {} bytes, fewer than the 4 a "
             "parameter its model ({} parameters) needs at least",
             iter_dir, on_disk, params);
  layout_ = ParamLayout::gpt(model_, tp_, 0);
  if (stage_ > 0) part_.emplace(layout_, dp_, 0, unit_);
}

const ShardReader& SavedCheckpoint::reader(int tp_rank, int dp_rank) {
  auto& slot = readers_[{tp_rank, dp_rank}];
  if (!slot) {
    ShardHeader h;
    h.tp_rank = tp_rank;
    h.dp_rank = dp_rank;
    h.tp = tp_;
    h.dp = dp_;
    h.zero_stage = stage_;
    h.iteration = iteration_;
    h.partition_unit = unit_;
    h.layout_numel = layout_.numel();
    h.shard_numel = part_ ? part_->shard_numel() : layout_.numel();
    const std::string name = shard_file_name(tp_rank, dp_rank);
    slot = std::make_unique<ShardReader>(
        dir_, name, h, static_cast<uint32_t>(shards_[name]["header_crc32"].get<uint64_t>()), acct_);
  }
  return *slot;
}

void SavedCheckpoint::read_full(const ParamSpec& p, int k, int64_t f, int64_t n, float* dst) {
  while (n > 0) {
    const TpLocation t = locate_tp(p, tp_, f);
    int64_t take = std::min(n, t.run);
    const int64_t at = p.offset + t.local;  // the same offset on every tp rank's layout
    if (!part_) {
      reader(t.tp_rank, 0).read(k, at, take, dst, cache_);
    } else {
      // A layout run never crosses a block; it may cross the parts of several dp ranks.
      for (int64_t done = 0; done < take;) {
        const ShardLocation s = locate_shard(*part_, at + done);
        const int64_t m = std::min(take - done, s.run);
        reader(t.tp_rank, s.dp_rank).read(k, s.offset, m, dst + done, cache_);
        done += m;
      }
    }
    f += take;
    dst += take;
    n -= take;
  }
}

void SavedCheckpoint::read_shard(int tp_rank, int dp_rank, int k, int64_t first, int64_t n,
                                 float* dst) {
  reader(tp_rank, dp_rank).read(k, first, n, dst, cache_);
}

}  // namespace zt
