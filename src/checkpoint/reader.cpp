#include "src/checkpoint/reader.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "src/checkpoint/file.h"
#include "src/checkpoint/layout_map.h"
#include "src/checkpoint/meta.h"
#include "src/core/error.h"

namespace zt {
namespace fs = std::filesystem;

std::string shard_file_name(int tp_rank, int dp_rank, int pp_rank, int pp) {
  if (pp == 1) return fmt::format("mp_rank_{:02d}_dp_{:03d}.bin", tp_rank, dp_rank);
  return fmt::format("mp_rank_{:02d}_{:03d}_dp_{:03d}.bin", tp_rank, pp_rank, dp_rank);
}

SavedCheckpoint::SavedCheckpoint(const std::string& iter_dir, const nlohmann::json& meta)
    : dir_(iter_dir) {
  const std::string where = (fs::path(iter_dir) / "meta.json").string();
  saved_ = read_layout(meta, where);
  const int tp = saved_.tp, pp = saved_.pp;
  ZT_REQUIRE(meta.contains("shards"), "'{}' lists no shard files", where);
  shards_ = meta["shards"];
  // Exactly the files this layout writes: one per (tp, pp, ep) rank (stage 0: the states are
  // replicated over the ranks holding the same experts) or per (tp, pp, dp).
  const int files_dp = saved_.stage == 0 ? saved_.ep : saved_.dp;
  const int64_t files = int64_t{tp} * pp * files_dp;
  ZT_REQUIRE(shards_.is_object() && static_cast<int64_t>(shards_.size()) == files,
             "'{}' lists {} shard files, the layout (tp {}, pp {}, dp {}, ep {}, stage {}) writes "
             "{}",
             where, shards_.is_object() ? shards_.size() : 0, tp, pp, saved_.dp, saved_.ep,
             saved_.stage, files);
  for (int s = 0; s < pp; ++s)
    for (int r = 0; r < tp; ++r)
      for (int d = 0; d < files_dp; ++d) {
        const std::string name = shard_file_name(r, d, s, pp);
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
  const int64_t params = saved_.model.num_parameters();
  ZT_REQUIRE(4.0 * static_cast<double>(params) <= static_cast<double>(on_disk),
             "checkpoint '{}' is truncated: its shard files hold {} bytes, fewer than the 4 a "
             "parameter its model ({} parameters) needs at least",
             iter_dir, on_disk, params);
  stages_.reserve(static_cast<size_t>(pp));
  for (int s = 0; s < pp; ++s) stages_.push_back(saved_stage(saved_, s));
  // Names are global across stages; the head block's copy is not saved (saved_stage).
  for (int s = 0; s < pp; ++s) {
    const ParamLayout& L = stages_[static_cast<size_t>(s)].layout;
    for (const ParamSpec& p : L.params())
      if (p.block != L.head_block()) tensors_.emplace(p.name, SavedTensor{&p, s});
  }
}

const SavedTensor* SavedCheckpoint::find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

int64_t SavedCheckpoint::section_numel(int pp_rank) const {
  return stages_.at(static_cast<size_t>(pp_rank)).section;
}

const ShardReader& SavedCheckpoint::reader(int tp_rank, int pp_rank, int dp_rank) {
  auto& slot = readers_[{tp_rank, pp_rank, dp_rank}];
  if (!slot) {
    const ShardHeader h =
        shard_header(saved_, stages_.at(static_cast<size_t>(pp_rank)), tp_rank, dp_rank);
    const std::string name = shard_file_name(tp_rank, dp_rank, pp_rank, saved_.pp);
    slot = std::make_unique<ShardReader>(
        dir_, name, h, static_cast<uint32_t>(shards_[name]["header_crc32"].get<uint64_t>()), acct_);
  }
  return *slot;
}

void SavedCheckpoint::read_full(const SavedTensor& t, int k, int64_t f, int64_t n, float* dst) {
  const ParamSpec& p = *t.spec;
  const std::optional<Partition>& part = stages_[static_cast<size_t>(t.stage)].part;
  while (n > 0) {
    // An expert's element lives in one ep rank's stack, split over tp as a whole tensor is.
    const EpLocation e = locate_ep(p, saved_.ep, f);
    const TpLocation l = locate_tp(p, saved_.tp, e.element);
    int64_t take = std::min({n, l.run, e.run});
    const int64_t at = p.offset + l.local;  // the same offset on every tp and ep rank's layout
    if (!part) {
      // Stage 0: file D holds ep rank D's states (the one copy of each).
      reader(l.tp_rank, t.stage, e.ep_rank).read(k, at, take, dst, cache_);
    } else {
      // A layout run never crosses a block; it may cross the parts of several dp ranks.
      for (int64_t done = 0; done < take;) {
        const ShardLocation s = locate_shard(*part, at + done, saved_.ep, e.ep_rank);
        const int64_t m = std::min(take - done, s.run);
        reader(l.tp_rank, t.stage, s.dp_rank).read(k, s.offset, m, dst + done, cache_);
        done += m;
      }
    }
    f += take;
    dst += take;
    n -= take;
  }
}

void SavedCheckpoint::read_shard(int tp_rank, int pp_rank, int dp_rank, int k, int64_t first,
                                 int64_t n, float* dst) {
  reader(tp_rank, pp_rank, dp_rank).read(k, first, n, dst, cache_);
}

}  // namespace zt
