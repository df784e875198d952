// save_checkpoint: every writing rank streams its shard into iter_N.tmp/, then rank 0 records
// meta.json and publishes the iteration.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "src/checkpoint/checkpoint.h"
#include "src/checkpoint/directory.h"
#include "src/checkpoint/file.h"
#include "src/checkpoint/layout_map.h"
#include "src/checkpoint/meta.h"
#include "src/checkpoint/reader.h"
#include "src/checkpoint/shard.h"
#include "src/checkpoint/shard_role.h"
#include "src/comm/rank_flags.h"
#include "src/core/error.h"

namespace zt {
namespace fs = std::filesystem;
namespace {

// This run's layout as a checkpoint records it.
CheckpointLayout layout_of(const CheckpointState& s, const ShardRole& role) {
  CheckpointLayout l;
  l.model = s.model;
  l.tp = role.tp;
  l.dp = role.dp;
  l.pp = role.pp;
  l.chunks = s.optimizer.layout().pipeline().chunks;
  l.first_stage_layers = s.optimizer.layout().pipeline().first_stage_layers;
  l.last_stage_layers = s.optimizer.layout().pipeline().last_stage_layers;
  l.stage = s.optimizer.stage();
  l.iteration = s.loop.iteration;
  l.partition_unit = s.partition_unit;
  return l;
}

// Pieces of at most this many bytes between progress reports where the host reads the device.
constexpr size_t kPieceBytes = size_t{64} << 20;

// The first `bytes` of a model-state tensor into the file: directly where the host reads the
// device's memory, else through the host staging buffer, piece by piece; `wrote` after each.
void write_tensor(ShardWriter& w, const Tensor& t, size_t bytes, const CheckpointState& s,
                  const std::function<void(size_t)>& wrote) {
  const bool staged = s.staging.data() != nullptr;
  const size_t room = staged ? s.staging.bytes() : kPieceBytes;
  const auto* src = static_cast<const char*>(t.data());
  for (size_t at = 0; at < bytes; at += room) {
    const size_t n = std::min(room, bytes - at);
    if (staged) {
      s.backend.copy_to_host(s.staging.data(), src + at, n);
      w.append(s.staging.data(), n);
    } else {
      w.append(src + at, n);
    }
    wrote(n);
  }
}

}  // namespace

std::string save_checkpoint(const std::string& dir, const CheckpointState& s,
                            const SaveHooks& hooks) {
  const ShardRole role = shard_role(s);
  const int iteration = s.loop.iteration;
  const int ranks = s.topology.world_size();
  const int rank = s.topology.rank();
  const bool root = rank == 0;
  const fs::path final_dir = fs::path(dir) / iteration_name(iteration);
  const fs::path tmp_dir = final_dir.string() + ".tmp";
  // A checkpoint never holds a non-finite model, so `latest` always names one a run can resume
  // from, whether or not the run checks its loss and gradients.
  const std::vector<int> bad =
      comm::ranks_where(s.topology.host_world(), !s.optimizer.master_finite());
  if (!bad.empty())
    throw Diverged(fmt::format("not saving iteration {} to {}: the fp32 master parameters are not "
                               "finite on {}; {} keeps its newest checkpoint",
                               iteration, dir, comm::ranks_text(bad), dir),
                   bad.front());
  if (root) {
    fs::create_directories(dir);
    remove_stale_tmp(dir);  // what a save that died left, this iteration's or another's
    fs::create_directories(tmp_dir);
  }
  world_barrier(s);
  const CheckpointLayout layout = layout_of(s, role);
  uint32_t crc = 0;
  if (role.writes) {
    // The file's header and section length from the same description a load rebuilds them from.
    const SavedStage stage = saved_stage(layout, role.pp_rank);
    const std::vector<Tensor> state = s.optimizer.owned_state();
    ZT_CHECK(stage.layout.numel() == s.optimizer.layout().numel() &&
                 stage.section <= state.at(0).numel(),
             "checkpoint layout of pipeline stage {} differs from the optimizer's", role.pp_rank);
    const ShardHeader header = shard_header(layout, stage, role.tp_rank, role.file_dp);
    ShardWriter w(
        (tmp_dir / shard_file_name(role.tp_rank, role.file_dp, role.pp_rank, role.pp)).string(),
        header);
    const size_t bytes = static_cast<size_t>(stage.section) * 4;
    const uint64_t total = bytes * state.size();
    uint64_t done = 0;
    for (const Tensor& t : state)
      write_tensor(w, t, bytes, s, [&](size_t n) {
        done += n;
        if (hooks.progress) hooks.progress(done, total);
      });
    crc = w.finish();
  }
  if (hooks.after_shard) hooks.after_shard();
  // Every rank's (writes, tp rank, pp rank, file dp, header CRC-32 in two exact 16-bit halves)
  // to everyone; the all-gather is also the point where every shard is on disk.
  constexpr int kFields = 6;
  std::vector<float> written(static_cast<size_t>(ranks * kFields));
  const float own[kFields] = {role.writes ? 1.0f : 0.0f,        static_cast<float>(role.tp_rank),
                              static_cast<float>(role.pp_rank), static_cast<float>(role.file_dp),
                              static_cast<float>(crc >> 16),    static_cast<float>(crc & 0xffffu)};
  std::copy(own, own + kFields, written.begin() + rank * kFields);
  s.topology.host_world().all_gather(Tensor(written.data(), {ranks * kFields}, DType::F32));
  if (root) {
    std::vector<uint64_t> file_bytes;  // by pipeline stage: every file of a stage is as long
    for (int p = 0; p < role.pp; ++p)
      file_bytes.push_back(shard_header(layout, saved_stage(layout, p), 0, 0).file_bytes());
    MetaRecord meta;
    meta.layout = layout;
    meta.precision = s.optimizer.working_dtype();
    meta.adam_step = s.optimizer.adam_step();
    meta.training = TrainingRecord{
        s.consumed_train_samples, s.loop.consumed_valid,       s.loop.scaler, s.seed, s.settings,
        s.loop.lr_steps,          s.loop.skipped_train_samples};
    meta.shards = nlohmann::json::object();
    for (int r = 0; r < ranks; ++r) {
      const float* w = written.data() + r * kFields;
      if (w[0] == 0.0f) continue;
      const int pp_rank = static_cast<int>(w[2]);
      meta.shards[shard_file_name(static_cast<int>(w[1]), static_cast<int>(w[3]), pp_rank,
                                  role.pp)] = {
          {"bytes", file_bytes[static_cast<size_t>(pp_rank)]},
          {"header_crc32", (static_cast<uint32_t>(w[4]) << 16) | static_cast<uint32_t>(w[5])}};
    }
    write_file_atomically(tmp_dir, "meta.json", meta_json(meta));
    sync_dir(tmp_dir);
    publish_iteration(dir, iteration, s.keep_last, hooks.at_publish);
  }
  world_barrier(s);
  return final_dir.string();
}

}  // namespace zt
