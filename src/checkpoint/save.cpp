// A save's three parts (save_parts.h): the ranks make iter_N.tmp/, every writing rank streams
// its shard into it, then rank 0 records meta.json and publishes the iteration; save_checkpoint
// runs them in a row.
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
#include "src/checkpoint/save_parts.h"
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
  l.ep = role.ep;
  l.chunks = s.optimizer.layout().pipeline().chunks;
  l.first_stage_layers = s.optimizer.layout().pipeline().first_stage_layers;
  l.last_stage_layers = s.optimizer.layout().pipeline().last_stage_layers;
  l.stage = s.optimizer.stage();
  l.iteration = s.loop.iteration;
  l.partition_unit = s.partition_unit;
  return l;
}

}  // namespace

SaveInProgress begin_save(const std::string& dir, const CheckpointState& s) {
  SaveInProgress save;
  save.dir = dir;
  save.role = shard_role(s);
  save.iteration = s.loop.iteration;
  save.world = s.topology.world_size();
  save.keep_last = s.keep_last;
  save.final_dir = fs::path(dir) / iteration_name(save.iteration);
  save.tmp_dir = save.final_dir.string() + ".tmp";
  // A checkpoint never holds a non-finite model, so `latest` always names one a run can resume
  // from, whether or not the run checks its loss and gradients.
  const std::vector<int> bad =
      comm::ranks_where(s.topology.host_world(), !s.optimizer.master_finite());
  if (!bad.empty())
    throw Diverged(fmt::format("not saving iteration {} to {}: the fp32 master parameters are not "
                               "finite on {}; {} keeps its newest checkpoint",
                               save.iteration, dir, comm::ranks_text(bad), dir),
                   bad.front());
  if (s.topology.rank() == 0) {
    fs::create_directories(dir);
    remove_stale_tmp(dir);  // what a save that died left, this iteration's or another's
    fs::create_directories(save.tmp_dir);
  }
  world_barrier(s);
  const ShardRole& role = save.role;
  MetaRecord& meta = save.meta;
  meta.layout = layout_of(s, role);
  meta.precision = s.optimizer.working_dtype();
  meta.adam_step = s.optimizer.adam_step();
  meta.training = TrainingRecord{
      s.consumed_train_samples, s.loop.consumed_valid,       s.loop.scaler, s.seed, s.settings,
      s.loop.lr_steps,          s.loop.skipped_train_samples};
  meta.token_ids = s.loop.token_ids;
  if (role.writes) {
    // The file's header and section length from the same description a load rebuilds them from.
    const SavedStage stage = saved_stage(meta.layout, role.pp_rank);
    ZT_CHECK(stage.layout.numel() == s.optimizer.layout().numel() &&
                 stage.section <= s.optimizer.states().numel() &&
                 OptimizerStates::kStates == ShardHeader::kTensors,
             "checkpoint layout of pipeline stage {} differs from the optimizer's", role.pp_rank);
    save.header = shard_header(meta.layout, stage, role.tp_rank, role.file_dp);
    save.shard_path =
        (save.tmp_dir / shard_file_name(role.tp_rank, role.file_dp, role.pp_rank, role.pp))
            .string();
    save.section_bytes = static_cast<size_t>(stage.section) * 4;
  }
  return save;
}

uint32_t write_shard(const SaveInProgress& save, const SectionReader& read, size_t piece,
                     const SaveHooks& hooks) {
  uint32_t crc = 0;
  if (save.role.writes) {
    ShardWriter w(save.shard_path, save.header);
    const size_t bytes = save.section_bytes;
    const uint64_t total = uint64_t{bytes} * ShardHeader::kTensors;
    uint64_t done = 0;
    for (int k = 0; k < static_cast<int>(ShardHeader::kTensors); ++k)
      for (size_t at = 0; at < bytes; at += piece) {
        const size_t n = std::min(piece, bytes - at);
        w.append(read(k, at, n), n);
        done += n;
        if (hooks.progress) hooks.progress(done, total);
      }
    crc = w.finish();
  }
  if (hooks.after_shard) hooks.after_shard();
  return crc;
}

std::string finish_save(const SaveInProgress& save, uint32_t crc, comm::Communicator& world,
                        const SaveHooks& hooks) {
  const ShardRole& role = save.role;
  const int ranks = save.world;
  const int rank = world.rank();
  // Every rank's (writes, tp rank, pp rank, file dp, header CRC-32 in two exact 16-bit halves)
  // to everyone; the all-gather is also the point where every shard is on disk.
  constexpr int kFields = 6;
  std::vector<float> written(static_cast<size_t>(ranks * kFields));
  const float own[kFields] = {role.writes ? 1.0f : 0.0f,        static_cast<float>(role.tp_rank),
                              static_cast<float>(role.pp_rank), static_cast<float>(role.file_dp),
                              static_cast<float>(crc >> 16),    static_cast<float>(crc & 0xffffu)};
  std::copy(own, own + kFields, written.begin() + rank * kFields);
  world.all_gather(Tensor(written.data(), {ranks * kFields}, DType::F32));
  if (rank == 0) {
    const CheckpointLayout& layout = save.meta.layout;
    std::vector<uint64_t> file_bytes;  // by pipeline stage: every file of a stage is as long
    for (int p = 0; p < role.pp; ++p)
      file_bytes.push_back(shard_header(layout, saved_stage(layout, p), 0, 0).file_bytes());
    MetaRecord meta = save.meta;
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
    write_file_atomically(save.tmp_dir, "meta.json", meta_json(meta));
    sync_dir(save.tmp_dir);
    publish_iteration(save.dir, save.iteration, save.keep_last, hooks.at_publish);
  }
  world.barrier();
  return save.final_dir.string();
}

uint32_t write_shard_from_state(const SaveInProgress& save, const CheckpointState& s,
                                const SaveHooks& hooks) {
  const std::vector<Tensor> state =
      save.role.writes ? s.optimizer.owned_state() : std::vector<Tensor>{};
  // Directly where the host reads the device's memory, else through the host staging buffer
  // (from the device, or from the tier offloaded states live on).
  const bool staged = s.staging.data() != nullptr;
  const SectionReader read = [&](int k, size_t at, size_t n) -> const void* {
    if (!s.optimizer.states_resident()) {
      auto* dst = static_cast<float*>(s.staging.data());
      s.optimizer.states().read(k, static_cast<int64_t>(at / 4), static_cast<int64_t>(n / 4), dst);
      return dst;
    }
    const auto* src = static_cast<const char*>(state[static_cast<size_t>(k)].data()) + at;
    if (!staged) return src;
    s.backend.copy_to_host(s.staging.data(), src, n);
    return s.staging.data();
  };
  return write_shard(save, read, staged ? s.staging.bytes() : kSavePieceBytes, hooks);
}

std::string save_checkpoint(const std::string& dir, const CheckpointState& s,
                            const SaveHooks& hooks) {
  const SaveInProgress save = begin_save(dir, s);
  const uint32_t crc = write_shard_from_state(save, s, hooks);
  return finish_save(save, crc, s.topology.host_world(), hooks);
}

}  // namespace zt
