#include "src/train/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "src/core/error.h"
#include "src/core/log.h"
#include "src/train/checkpoint_dir.h"
#include "src/train/checkpoint_file.h"
#include "src/train/checkpoint_map.h"
#include "src/train/checkpoint_meta.h"
#include "src/train/checkpoint_reader.h"
#include "src/train/checkpoint_shard.h"
#include "src/zero/partition.h"
#include "src/zero/zero_optimizer.h"

namespace zt {
namespace fs = std::filesystem;
namespace {

struct Identity {
  int tp_rank = 0, dp_rank = 0, pp_rank = 0, tp = 1, dp = 1, pp = 1;
  bool writes = true;
  int shard_dp = 0;  // the dp index whose file holds this rank's states
};

Identity identity(Trainer& t) {
  Identity id;
  if (comm::Topology* topo = t.topology()) {
    id.tp_rank = topo->tp_rank();
    id.dp_rank = topo->dp_rank();
    id.pp_rank = topo->pp_rank();
    id.tp = topo->tp_size();
    id.dp = topo->dp_size();
    id.pp = topo->pp_size();
  }
  const bool replicated = t.optimizer().state_replicated_over_dp();
  id.shard_dp = replicated ? 0 : id.dp_rank;
  id.writes = !replicated || id.dp_rank == 0;
  return id;
}

void barrier(Trainer& t) {
  if (t.topology() != nullptr) t.topology()->host_world().barrier();
}

int64_t global_batch(const Trainer& t, const Identity& id) {
  const TrainOptions& o = t.options();
  return o.global_batch_size == 0 ? int64_t{o.micro_batch_size} * id.dp
                                  : int64_t{o.global_batch_size};
}

// This run's layout as a checkpoint records it.
SavedLayout saved_layout_of(Trainer& t, const Identity& id, int iteration) {
  SavedLayout s;
  s.model = t.config();
  s.tp = id.tp;
  s.dp = id.dp;
  s.pp = id.pp;
  s.chunks = t.optimizer().layout().pipeline().chunks;
  s.stage = t.optimizer().stage();
  s.iteration = iteration;
  s.partition_unit = t.options().reduce_bucket_size;
  return s;
}

// The first `bytes` of a model-state tensor into the file: directly where the host reads the
// device's memory, else through the trainer's host chunk, piece by piece.
void write_tensor(ShardWriter& w, const Tensor& s, size_t bytes, Trainer& t) {
  if (t.host_chunk() == nullptr) {
    w.append(s.data(), bytes);
    return;
  }
  const size_t room = t.host_chunk_bytes();
  const auto* src = static_cast<const char*>(s.data());
  for (size_t at = 0; at < bytes; at += room) {
    const size_t n = std::min(room, bytes - at);
    t.context().backend().copy_to_host(t.host_chunk(), src + at, n);
    w.append(t.host_chunk(), n);
  }
}

// Where a load writes one state tensor: straight into it where the host reaches the device's
// memory (CPU), else into the trainer's host chunk, copied to the device when full.
class StateSink {
 public:
  StateSink(Trainer& t, const Tensor& state)
      : be_(t.context().backend()),
        base_(state.f32()),
        staging_(static_cast<float*>(t.host_chunk())),
        cap_(static_cast<int64_t>(t.host_chunk_bytes() / 4)) {}
  int64_t capacity() const {
    return staging_ != nullptr ? cap_ : std::numeric_limits<int64_t>::max();
  }
  // Host memory for elements [at, at + n) of the state (n <= capacity()).
  float* window(int64_t at, int64_t n) {
    if (staging_ == nullptr) return base_ + at;
    if (pending_ > 0 && (at != first_ + pending_ || pending_ + n > cap_)) flush();
    if (pending_ == 0) first_ = at;
    float* p = staging_ + pending_;
    pending_ += n;
    return p;
  }
  void flush() {
    if (pending_ > 0)
      be_.copy_to_device(base_ + first_, staging_, static_cast<size_t>(pending_) * 4);
    pending_ = 0;
  }

 private:
  Backend& be_;
  float* base_;
  float* staging_;
  int64_t cap_, first_ = 0, pending_ = 0;
};

// One stretch of a rank's owned state: `len` elements of parameter `p` from its local element
// `local`, kept at `dest` in the state tensors.
struct OwnedRun {
  const ParamSpec* p;
  int64_t local, len, dest;
};

std::vector<OwnedRun> owned_runs(Trainer& t) {
  const ParamLayout& L = t.optimizer().layout();
  std::vector<OwnedRun> runs;
  for (const auto& s : t.optimizer().shard().segments) {
    const ParamSpec& p = L.params()[static_cast<size_t>(s.param)];
    runs.push_back({&p, s.layout_offset - p.offset, s.len, s.shard_offset});
  }
  return runs;
}

// The universal path: every element of `runs` found by name in the saved layout (a tied head
// copy under "embedding.word", the one saved) and read from the byte ranges that hold it, a run
// at a time. Rows the checkpoint lacks (a larger vocabulary padding) keep their master values
// and get zero moments.
void load_runs(SavedCheckpoint& saved, Trainer& t, const std::vector<OwnedRun>& runs,
               const std::string& where) {
  for (const auto& p : t.optimizer().layout().params()) {
    const SavedTensor* st = saved.find(p.name);
    ZT_REQUIRE(st != nullptr, "checkpoint '{}' has no tensor '{}'", where, p.name);
    const ParamSpec* s = st->spec;
    // Only the vocabulary padding (a multiple of 128·tp) may differ; its rows carry no signal.
    ZT_REQUIRE(s->full_shape == p.full_shape ||
                   (p.full_shape.rank() == 2 && s->full_shape.rank() == 2 &&
                    s->full_shape[1] == p.full_shape[1] && p.name == "embedding.word"),
               "checkpoint tensor '{}' has shape {}, this model {}", p.name, s->full_shape.str(),
               p.full_shape.str());
  }
  const std::vector<Tensor> state = t.optimizer().owned_state();
  for (int k = 0; k < ShardHeader::kTensors; ++k) {
    StateSink sink(t, state[static_cast<size_t>(k)]);
    for (const OwnedRun& r : runs) {
      const SavedTensor& st = *saved.find(r.p->name);
      const ParamSpec& s = *st.spec;
      for (int64_t i = r.local; i < r.local + r.len;) {
        const int64_t f = r.p->full_index(i);
        const int64_t run = std::min({full_run(*r.p, i), r.local + r.len - i, sink.capacity()});
        const int64_t have = std::clamp<int64_t>(s.full_numel() - f, 0, run);
        const int64_t dest = r.dest + (i - r.local);
        if (have > 0) saved.read_full(st, k, f, have, sink.window(dest, have));
        if (have < run && k > 0) std::fill_n(sink.window(dest + have, run - have), run - have, 0.f);
        i += run;
      }
    }
    sink.flush();
  }
}

// The saved layout is this run's: each state's saved prefix is one section of this rank's own
// shard file; the rest, the last stage's tied head copy, loads from the saved embedding.word.
void load_same_layout(SavedCheckpoint& saved, Trainer& t, const Identity& id,
                      const std::string& where) {
  const std::vector<Tensor> state = t.optimizer().owned_state();
  const int64_t section = saved.section_numel(id.pp_rank);
  for (int k = 0; k < ShardHeader::kTensors; ++k) {
    StateSink sink(t, state[static_cast<size_t>(k)]);
    for (int64_t at = 0; at < section;) {
      const int64_t n = std::min(section - at, sink.capacity());
      saved.read_shard(id.tp_rank, id.pp_rank, id.shard_dp, k, at, n, sink.window(at, n));
      at += n;
    }
    sink.flush();
  }
  std::vector<OwnedRun> head;
  for (const OwnedRun& r : owned_runs(t))
    if (r.dest >= section) head.push_back(r);
  if (!head.empty()) load_runs(saved, t, head, where);
}

}  // namespace

std::string save_checkpoint(const std::string& dir, Trainer& t, const SaveHooks& hooks) {
  const Trainer::LoopState loop = t.loop_state();
  const Identity id = identity(t);
  const bool root = t.topology() == nullptr || t.topology()->rank() == 0;
  const fs::path final_dir = fs::path(dir) / iteration_name(loop.iteration);
  const fs::path tmp_dir = final_dir.string() + ".tmp";
  if (root) {
    fs::create_directories(dir);
    remove_stale_tmp(dir);  // what a save that died left, this iteration's or another's
    fs::create_directories(tmp_dir);
  }
  barrier(t);
  const SavedLayout layout = saved_layout_of(t, id, loop.iteration);
  uint32_t crc = 0;
  if (id.writes) {
    // The file's header and section length from the same description a load rebuilds them from.
    const SavedStage stage = saved_stage(layout, id.pp_rank);
    const std::vector<Tensor> state = t.optimizer().owned_state();
    ZT_CHECK(stage.layout.numel() == t.optimizer().layout().numel() &&
                 stage.section <= state.at(0).numel(),
             "checkpoint layout of pipeline stage {} differs from the optimizer's", id.pp_rank);
    const ShardHeader header = shard_header(layout, stage, id.tp_rank, id.shard_dp);
    ShardWriter w((tmp_dir / shard_file_name(id.tp_rank, id.shard_dp, id.pp_rank, id.pp)).string(),
                  header);
    for (const Tensor& s : state) write_tensor(w, s, static_cast<size_t>(stage.section) * 4, t);
    crc = w.finish();
  }
  if (hooks.after_shard) hooks.after_shard();
  // Every rank's (writes, tp rank, pp rank, shard dp, header CRC-32 in two exact 16-bit halves)
  // to everyone; the all-gather is also the point where every shard is on disk.
  constexpr int kFields = 6;
  const int ranks = t.topology() != nullptr ? t.topology()->world_size() : 1;
  const int me = t.topology() != nullptr ? t.topology()->rank() : 0;
  std::vector<float> written(static_cast<size_t>(ranks * kFields));
  const float mine[kFields] = {id.writes ? 1.0f : 0.0f,        static_cast<float>(id.tp_rank),
                               static_cast<float>(id.pp_rank), static_cast<float>(id.shard_dp),
                               static_cast<float>(crc >> 16),  static_cast<float>(crc & 0xffffu)};
  std::copy(mine, mine + kFields, written.begin() + me * kFields);
  if (t.topology() != nullptr)
    t.topology()->host_world().all_gather(Tensor(written.data(), {ranks * kFields}, DType::F32));
  if (root) {
    nlohmann::json meta;
    meta["format"] = "zerotron-checkpoint-3";
    meta["zerotron_version"] = zerotron_version();
    meta["iteration"] = loop.iteration;
    meta["consumed_train_samples"] = t.consumed_train_samples();
    meta["consumed_valid_samples"] = loop.consumed_valid;
    meta["model"] = model_to_json(t.config());
    meta["layout"] = {{"tensor_model_parallel_size", id.tp},
                      {"pipeline_model_parallel_size", id.pp},
                      {"virtual_pipeline_model_parallel_size", layout.chunks},
                      {"data_parallel_size", id.dp},
                      {"zero_stage", t.optimizer().stage()},
                      {"precision", std::string(dtype_name(t.optimizer().working_dtype()))}};
    meta["adam_step"] = t.optimizer().adam_step();
    // The partition unit (Partition's constant bucket): what a reshaping load needs to find
    // every element in the stage 1-3 shards.
    meta["partition_unit_elems"] = t.options().reduce_bucket_size;
    meta["loss_scaler"] = {{"scale", loop.scaler.scale},
                           {"growth_tracker", loop.scaler.growth_tracker},
                           {"hysteresis_left", loop.scaler.hysteresis_left},
                           {"consecutive_skips", loop.scaler.consecutive_skips}};
    // Dropout and the data order are pure functions of (seed, sample index): the seed and the
    // consumed samples are the whole random state.
    meta["seed"] = t.options().seed;
    // What the numbers depend on besides the states: a resumed run is told what it changed.
    meta["settings"] = training_settings(t.options(), global_batch(t, id));
    std::vector<uint64_t> file_bytes;  // by pipeline stage: every file of a stage is as long
    for (int s = 0; s < id.pp; ++s)
      file_bytes.push_back(shard_header(layout, saved_stage(layout, s), 0, 0).file_bytes());
    nlohmann::json shards = nlohmann::json::object();
    for (int r = 0; r < ranks; ++r) {
      const float* w = written.data() + r * kFields;
      if (w[0] == 0.0f) continue;
      const int pp_rank = static_cast<int>(w[2]);
      shards[shard_file_name(static_cast<int>(w[1]), static_cast<int>(w[3]), pp_rank, id.pp)] = {
          {"bytes", file_bytes[static_cast<size_t>(pp_rank)]},
          {"header_crc32", (static_cast<uint32_t>(w[4]) << 16) | static_cast<uint32_t>(w[5])}};
    }
    meta["shards"] = shards;
    write_file_atomically(tmp_dir, "meta.json", meta.dump(2));
    sync_dir(tmp_dir);
    publish_iteration(dir, loop.iteration, t.options().keep_last, hooks.at_publish);
  }
  barrier(t);
  return final_dir.string();
}

std::string checkpoint_iteration_dir(const std::string& dir, std::optional<int64_t> iteration,
                                     nlohmann::json& meta) {
  std::string name;
  if (iteration) {
    name = iteration_name(*iteration);
  } else {
    const std::optional<std::string> latest = read_latest(dir);
    ZT_REQUIRE(latest.has_value(), "--load '{}': no 'latest' file, so no complete checkpoint", dir);
    name = *latest;
  }
  const fs::path iter_dir = fs::path(dir) / name;
  // The iteration directory is the checkpoint's own: a symbolic link could lead anywhere.
  std::error_code ec;
  ZT_REQUIRE(!fs::is_symlink(iter_dir, ec), "checkpoint directory '{}' is a symbolic link",
             iter_dir.string());
  meta = parse_meta_json(read_small_file(iter_dir, "meta.json", kMaxMetaBytes),
                         (iter_dir / "meta.json").string());
  ZT_REQUIRE(meta.is_object() && meta.contains("iteration") &&
                 meta["iteration"].is_number_integer() &&
                 iteration_name(meta["iteration"].get<int64_t>()) == name,
             "'{}' does not record iteration {}", (iter_dir / "meta.json").string(), name);
  return iter_dir.string();
}

std::string latest_iteration_dir(const std::string& dir, nlohmann::json& meta) {
  return checkpoint_iteration_dir(dir, std::nullopt, meta);
}

int load_checkpoint(const std::string& dir, Trainer& t, LoadAccounting* accounting) {
  nlohmann::json meta;
  const std::string iter_dir = latest_iteration_dir(dir, meta);
  const std::string where = (fs::path(iter_dir) / "meta.json").string();
  SavedCheckpoint saved(iter_dir, meta);  // every field checked before anything is read
  const Identity id = identity(t);
  nlohmann::json saved_model = model_to_json(saved.model()), want_model = model_to_json(t.config());
  saved_model.erase("padded_vocab_size");  // follows tp (Megatron pads to 128·tp)
  want_model.erase("padded_vocab_size");
  ZT_REQUIRE(saved_model == want_model, "checkpoint '{}' holds model {} but this run is {}",
             iter_dir, model_to_json(saved.model()).dump(), model_to_json(t.config()).dump());
  const int stage = t.optimizer().stage();
  const bool same = saved.tp() == id.tp && saved.pp() == id.pp &&
                    saved.chunks() == t.optimizer().layout().pipeline().chunks &&
                    saved.dp() == id.dp && saved.stage() == stage &&
                    (stage == 0 || saved.partition_unit() == t.options().reduce_bucket_size) &&
                    saved.model().padded_vocab_size == t.config().padded_vocab_size;
  if (same)
    load_same_layout(saved, t, id, iter_dir);
  else
    load_runs(saved, t, owned_runs(t), iter_dir);
  t.optimizer().after_load(int_field(meta, "adam_step", 0, int64_t{1} << 40, where));
  Trainer::LoopState loop;
  loop.iteration = static_cast<int>(int_field(meta, "iteration", 0, (int64_t{1} << 31) - 1, where));
  loop.consumed_valid = int_field(meta, "consumed_valid_samples", 0, int64_t{1} << 50, where);
  loop.scaler = t.loop_state().scaler;  // an imported checkpoint has no scaler state
  if (meta.contains("loss_scaler")) {
    const auto& ls = meta["loss_scaler"];
    ZT_REQUIRE(ls.is_object() && ls.contains("scale") && ls["scale"].is_number(),
               "'{}': loss_scaler.scale must be a number", where);
    loop.scaler.scale = ls["scale"].get<double>();
    ZT_REQUIRE(loop.scaler.scale > 0 && loop.scaler.scale < 1e300, "'{}': loss_scaler.scale is {}",
               where, loop.scaler.scale);
    loop.scaler.growth_tracker =
        static_cast<int>(int_field(ls, "growth_tracker", 0, 1 << 30, where));
    loop.scaler.hysteresis_left =
        static_cast<int>(int_field(ls, "hysteresis_left", 0, 1 << 30, where));
    // Written since --max-consecutive-skips counts across a resume; absent in older checkpoints.
    loop.scaler.consecutive_skips =
        ls.contains("consecutive_skips")
            ? static_cast<int>(int_field(ls, "consecutive_skips", 0, 1 << 30, where))
            : 0;
  }
  t.restore_loop_state(loop);
  for (const std::string& line :
       changed_settings(meta.value("settings", nlohmann::json()),
                        training_settings(t.options(), global_batch(t, id))))
    log::info("zerotron: warning: {}", line);
  if (accounting != nullptr) *accounting = saved.accounting();
  barrier(t);
  return loop.iteration;
}

}  // namespace zt
