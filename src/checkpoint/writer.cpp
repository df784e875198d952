#include "src/checkpoint/writer.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "src/checkpoint/directory.h"
#include "src/checkpoint/file.h"
#include "src/checkpoint/layout_map.h"
#include "src/checkpoint/meta.h"
#include "src/checkpoint/reader.h"
#include "src/checkpoint/shard.h"
#include "src/core/error.h"
#include "src/zero/partition.h"

namespace zt {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kChunkElems = int64_t{1} << 20;  // 4 MiB of fp32

// A shard's elements in file order: `len` elements of parameter `p` from local element `local`
// at shard offset `at`; what lies between runs is partition padding (zeros).
struct Run {
  const ParamSpec* p;
  int64_t local, len, at;
};

std::vector<Run> shard_runs(const ParamLayout& L, const CheckpointLayout& lay, int dp_rank,
                            int64_t& shard_numel) {
  std::vector<Run> runs;
  if (lay.stage == 0) {
    for (const auto& p : L.params()) runs.push_back({&p, 0, p.numel(), p.offset});
    shard_numel = L.numel();
    return runs;
  }
  const Partition part(L, lay.dp, dp_rank, lay.partition_unit);
  for (const auto& s : part.segments()) {
    const ParamSpec& p = L.params()[static_cast<size_t>(s.param)];
    runs.push_back({&p, s.layout_offset - p.offset, s.len, s.shard_offset});
  }
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.at < b.at; });
  shard_numel = part.shard_numel();
  return runs;
}

// The master section of one shard, streamed through one chunk buffer.
void write_master(ShardWriter& w, const std::vector<Run>& runs, int64_t shard_numel,
                  const GptConfig& model, const FullTensorSource& source) {
  std::vector<float> chunk(static_cast<size_t>(kChunkElems));
  int64_t chunk_at = 0;               // shard offset of chunk[0]
  auto flush_to = [&](int64_t end) {  // zeros up to shard offset `end`, full chunks written
    while (chunk_at + kChunkElems <= end) {
      w.append(chunk.data(), chunk.size() * 4);
      std::fill(chunk.begin(), chunk.end(), 0.0f);
      chunk_at += kChunkElems;
    }
  };
  std::fill(chunk.begin(), chunk.end(), 0.0f);
  for (const Run& r : runs) {
    const ParamSpec& p = *r.p;
    // Rows past the real vocabulary are padding: left zero.
    const int64_t real =
        p.name == "embedding.word" ? int64_t{model.vocab_size} * p.full_shape[1] : p.full_numel();
    for (int64_t i = r.local; i < r.local + r.len;) {
      const int64_t at = r.at + (i - r.local);
      flush_to(at);
      const int64_t f = p.full_index(i);
      const int64_t n =
          std::min({full_run(p, i), r.local + r.len - i, chunk_at + kChunkElems - at});
      const int64_t have = std::clamp<int64_t>(real - f, 0, n);
      if (have > 0) source(p, f, have, chunk.data() + (at - chunk_at));
      i += n;
    }
  }
  flush_to(shard_numel);
  if (shard_numel > chunk_at)
    w.append(chunk.data(), static_cast<size_t>(shard_numel - chunk_at) * 4);
}

void write_zeros(ShardWriter& w, int64_t n) {
  const std::vector<float> zeros(static_cast<size_t>(std::min(n, kChunkElems)), 0.0f);
  for (int64_t at = 0; at < n; at += kChunkElems)
    w.append(zeros.data(), static_cast<size_t>(std::min(kChunkElems, n - at)) * 4);
}

}  // namespace

void write_checkpoint(const std::string& dir, const CheckpointLayout& lay,
                      const FullTensorSource& source, const nlohmann::json& token_ids) {
  ZT_CHECK(lay.pp == 1 && lay.chunks == 1 && lay.ep == 1 && lay.iteration == 0,
           "write_checkpoint writes iteration 0 of a layout without a pipeline or expert "
           "parallelism");
  const GptConfig& model = lay.model;
  prepare_save_dir(dir);
  const CheckpointLock lock(dir);
  remove_stale_tmp(dir);
  const fs::path tmp = fs::path(dir) / (iteration_name(0) + ".tmp");
  fs::create_directories(tmp);
  nlohmann::json shards = nlohmann::json::object();
  const int files_dp = lay.stage == 0 ? 1 : lay.dp;
  const SavedStage stage = saved_stage(lay, 0);
  for (int r = 0; r < lay.tp; ++r) {
    const ParamLayout L = ParamLayout::gpt(model, lay.tp, r);
    for (int d = 0; d < files_dp; ++d) {
      int64_t shard_numel = 0;
      const std::vector<Run> runs = shard_runs(L, lay, d, shard_numel);
      const ShardHeader h = shard_header(lay, stage, r, d);
      ZT_CHECK(h.shard_numel == shard_numel, "import: shard of {} elements, its header says {}",
               shard_numel, h.shard_numel);
      const std::string name = shard_file_name(r, d);
      ShardWriter w((tmp / name).string(), h);
      write_master(w, runs, shard_numel, model, source);
      write_zeros(w, 2 * shard_numel);  // Adam m and v
      shards[name] = {{"bytes", h.file_bytes()}, {"header_crc32", w.finish()}};
    }
  }
  MetaRecord meta;
  meta.layout = lay;
  meta.shards = shards;
  meta.token_ids = token_ids;
  write_file_atomically(tmp, "meta.json", meta_json(meta));
  sync_dir(tmp);
  publish_iteration(dir, 0, 0);
}

}  // namespace zt
