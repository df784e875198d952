// load_checkpoint: the same-layout path (each rank its own file, straight into place) and the
// reshaping path (each owned run found by name and read from the byte ranges that hold it).
#include <algorithm>
#include <filesystem>
#include <limits>
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
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/zero/partition.h"

namespace zt {
namespace fs = std::filesystem;
namespace {

// Where a load writes state k (owned_state()'s order): straight into it where the host reaches
// the device's memory (CPU) and the state is resident there, else into the host staging buffer,
// written to the state's tier (the device, or offloaded states) when full.
class StateSink {
 public:
  StateSink(const CheckpointState& s, int k)
      : be_(s.backend),
        states_(s.optimizer.states()),
        resident_(s.optimizer.states_resident()),
        k_(k),
        base_(states_.resident(k)),
        staging_(static_cast<float*>(s.staging.data())),
        cap_(static_cast<int64_t>(s.staging.bytes() / 4)) {}
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
    if (pending_ > 0) {
      if (resident_)
        be_.copy_to_device(base_ + first_, staging_, static_cast<size_t>(pending_) * 4);
      else
        states_.write(k_, first_, pending_, staging_);
    }
    pending_ = 0;
  }

 private:
  Backend& be_;
  OptimizerStates& states_;
  bool resident_;
  int k_;
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

std::vector<OwnedRun> owned_runs(const CheckpointState& s) {
  const ParamLayout& L = s.optimizer.layout();
  std::vector<OwnedRun> runs;
  for (const auto& seg : s.optimizer.shard().segments) {
    const ParamSpec& p = L.params()[static_cast<size_t>(seg.param)];
    runs.push_back({&p, seg.layout_offset - p.offset, seg.len, seg.shard_offset});
  }
  return runs;
}

// The universal path: every element of `runs` found by name in the saved layout (a tied head
// copy under "embedding.word", the one saved) and read from the byte ranges that hold it, a run
// at a time. Rows the checkpoint lacks (a larger vocabulary padding) keep their master values
// and get zero moments.
void load_runs(SavedCheckpoint& saved, const CheckpointState& state,
               const std::vector<OwnedRun>& runs, const std::string& where, int tensors_read) {
  for (const auto& p : state.optimizer.layout().params()) {
    const SavedTensor* st = saved.find(p.name);
    ZT_REQUIRE(st != nullptr, "checkpoint '{}' has no tensor '{}'", where, p.name);
    const ParamSpec* s = st->spec;
    // Only the rows may differ: the vocabulary padding (a multiple of 128·tp), whose rows carry
    // no signal, and the position table, of which a shorter sequence reads the first rows.
    ZT_REQUIRE(s->full_shape == p.full_shape ||
                   (p.full_shape.rank() == 2 && s->full_shape.rank() == 2 &&
                    s->full_shape[1] == p.full_shape[1] &&
                    (p.name == "embedding.word" ||
                     (p.name == "embedding.position" && p.full_shape[0] < s->full_shape[0]))),
               "checkpoint tensor '{}' has shape {}, this model {}", p.name, s->full_shape.str(),
               p.full_shape.str());
  }
  for (int k = 0; k < tensors_read; ++k) {
    StateSink sink(state, k);
    for (const OwnedRun& r : runs) {
      const SavedTensor& st = *saved.find(r.p->name);
      const ParamSpec& s = *st.spec;
      for (int64_t i = r.local; i < r.local + r.len;) {
        const int64_t f = r.p->full_index(i);
        const int64_t run = std::min({full_run(*r.p, i), r.local + r.len - i, sink.capacity()});
        const int64_t have = std::clamp<int64_t>(s.full_numel() - f, 0, run);
        const int64_t dest = r.dest + (i - r.local);
        if (have > 0) {
          saved.read_full(st, k, f, have, sink.window(dest, have));
          if (state.read_progress) state.read_progress(static_cast<uint64_t>(have) * 4);
        }
        if (have < run && k > 0) std::fill_n(sink.window(dest + have, run - have), run - have, 0.f);
        i += run;
      }
    }
    sink.flush();
  }
}

// The saved layout is this run's: each state's saved prefix is one section of this rank's own
// shard file; the rest, the last stage's tied head copy, loads from the saved embedding.word.
void load_same_layout(SavedCheckpoint& saved, const CheckpointState& state, const ShardRole& role,
                      const std::string& where, int tensors_read) {
  const int64_t section = saved.section_numel(role.pp_rank);
  for (int k = 0; k < tensors_read; ++k) {
    StateSink sink(state, k);
    for (int64_t at = 0; at < section;) {
      const int64_t n = std::min(section - at, sink.capacity());
      saved.read_shard(role.tp_rank, role.pp_rank, role.file_dp, k, at, n, sink.window(at, n));
      if (state.read_progress) state.read_progress(static_cast<uint64_t>(n) * 4);
      at += n;
    }
    sink.flush();
  }
  std::vector<OwnedRun> head;
  for (const OwnedRun& r : owned_runs(state))
    if (r.dest >= section) head.push_back(r);
  if (!head.empty()) load_runs(saved, state, head, where, tensors_read);
}

// The states a load does not take (Adam's moments under --finetune or --no-load-optim) start
// fresh: zero.
void zero_states(const CheckpointState& state, int from) {
  for (int k = from; k < OptimizerStates::kStates; ++k) {
    StateSink sink(state, k);
    const int64_t n = state.optimizer.states().numel();
    for (int64_t at = 0; at < n;) {
      const int64_t len = std::min(n - at, sink.capacity());
      std::fill_n(sink.window(at, len), len, 0.f);
      at += len;
    }
    sink.flush();
  }
}

// "iterations 5, 10", "no iteration", or for many "iterations 0, 5, 10, 15, ..., 95 (20
// iterations)": one line whatever DIR holds.
std::string iterations_text(const std::vector<int64_t>& its) {
  if (its.empty()) return "no iteration";
  constexpr size_t kShown = 8;
  std::string text;
  for (size_t i = 0; i < its.size(); ++i) {
    if (its.size() > kShown && i == kShown / 2) {
      text += ", ...";
      i = its.size() - kShown / 2;
    }
    text += (text.empty() ? "" : ", ") + std::to_string(its[i]);
  }
  if (its.size() > kShown) text += fmt::format(" ({} iterations)", its.size());
  return (its.size() == 1 ? "iteration " : "iterations ") + text;
}

}  // namespace

std::string checkpoint_iteration_dir(const std::string& dir, std::optional<int64_t> iteration,
                                     nlohmann::json& meta) {
  std::string name;
  if (iteration) {
    name = iteration_name(*iteration);
    std::error_code ec;
    ZT_REQUIRE(fs::is_directory(fs::path(dir) / name, ec),
               "--load '{}' has no iteration {}; it holds {}", dir, *iteration,
               iterations_text(saved_iterations(dir)));
  } else {
    const std::optional<std::string> latest = read_latest(dir);
    ZT_REQUIRE(latest.has_value(), "--load '{}': no 'latest' file, so no complete checkpoint", dir);
    name = *latest;
  }
  // The iteration directory may be a symbolic link (kept on another disk): its files are still
  // opened only as regular files inside it, and its meta.json must record this iteration.
  const fs::path iter_dir = fs::path(dir) / name;
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

namespace {

struct ReadResult {
  LoopState loop;
  int64_t adam_step = 0;
};

// load_checkpoint's reads and checks: everything before the collectives that follow them.
ReadResult read_checkpoint(const std::string& dir, const CheckpointState& state,
                           LoadAccounting* accounting, const LoadScope& scope) {
  nlohmann::json meta;
  const std::string iter_dir = checkpoint_iteration_dir(dir, scope.iteration, meta);
  const std::string where = (fs::path(iter_dir) / "meta.json").string();
  SavedCheckpoint saved(iter_dir, meta);  // every field checked before anything is read
  const ShardRole role = shard_role(state);
  const std::vector<std::string> model_changes = check_checkpoint_model(meta, state.model, where);
  const int stage = state.optimizer.stage();
  const bool same =
      saved.tp() == role.tp && saved.pp() == role.pp && saved.ep() == role.ep &&
      saved.chunks() == state.optimizer.layout().pipeline().chunks &&
      saved.first_stage_layers() == state.optimizer.layout().pipeline().first_stage_layers &&
      saved.last_stage_layers() == state.optimizer.layout().pipeline().last_stage_layers &&
      saved.dp() == role.dp && saved.stage() == stage &&
      (stage == 0 || saved.partition_unit() == state.partition_unit) &&
      saved.model().padded_vocab_size == state.model.padded_vocab_size &&
      saved.model().seq_length == state.model.seq_length;
  // The fp32 master weights always; Adam's two moments with the optimizer.
  const int tensors_read = scope.optimizer ? ShardHeader::kTensors : 1;
  if (same)
    load_same_layout(saved, state, role, iter_dir, tensors_read);
  else
    load_runs(saved, state, owned_runs(state), iter_dir, tensors_read);
  if (!scope.optimizer) zero_states(state, tensors_read);
  ReadResult read;
  if (scope.optimizer) read.adam_step = int_field(meta, "adam_step", 0, int64_t{1} << 40, where);
  LoopState& loop = read.loop;
  loop.scaler = state.loop.scaler;  // an imported checkpoint has no scaler state
  if (scope.progress) {
    loop.iteration =
        static_cast<int>(int_field(meta, "iteration", 0, (int64_t{1} << 31) - 1, where));
    loop.consumed_valid = int_field(meta, "consumed_valid_samples", 0, int64_t{1} << 50, where);
    loop.skipped_train_samples = skipped_samples(meta, where);
  }
  if (scope.optimizer)
    loop.lr_steps = meta.contains("lr_schedule_steps")
                        ? static_cast<int>(int_field(meta, "lr_schedule_steps", 0,
                                                     (int64_t{1} << 31) - 1, where))
                        : loop.iteration;
  if (scope.rng && meta.contains("seed"))
    loop.seed = int_field(meta, "seed", 0, std::numeric_limits<int64_t>::max(), where);
  if (meta.contains("token_ids")) {
    ZT_REQUIRE(meta["token_ids"].is_object(), "'{}': token_ids must be an object", where);
    loop.token_ids = meta["token_ids"];
  }
  if (scope.optimizer && meta.contains("loss_scaler")) {
    const auto& ls = meta["loss_scaler"];
    ZT_REQUIRE(ls.is_object() && ls.contains("scale") && ls["scale"].is_number(),
               "'{}': loss_scaler.scale must be a number", where);
    loop.scaler.scale = ls["scale"].get<double>();
    ZT_REQUIRE(loop.scaler.scale > 0 && loop.scaler.scale < 1e300, "'{}': loss_scaler.scale is {}",
               where, loop.scaler.scale);
    loop.scaler.growth_tracker =
        static_cast<int>(int_field(ls, "growth_tracker", 0, 1 << 30, where));
    // Below zero once the hysteresis is spent: every further overflow halves the scale until a
    // clean window restores it (Megatron's tracker, which has no floor either).
    loop.scaler.hysteresis_left =
        static_cast<int>(int_field(ls, "hysteresis_left", -(1 << 30), 1 << 30, where));
    // Written since --max-consecutive-skips counts across a resume; absent in older checkpoints.
    loop.scaler.consecutive_skips =
        ls.contains("consecutive_skips")
            ? static_cast<int>(int_field(ls, "consecutive_skips", 0, 1 << 30, where))
            : 0;
  }
  for (const std::string& line : model_changes) log::info("zerotron: warning: {}", line);
  for (const std::string& line :
       changed_settings(meta.value("settings", nlohmann::json()), state.settings))
    log::info("zerotron: warning: {}", line);
  if (accounting != nullptr) *accounting = saved.accounting();
  return read;
}

// Every rank learns whether any rank's reads failed and, if so, throws: its own line, or the
// lowest failing rank's where its own reads succeeded. No rank goes on to the collectives after the
// reads (the parameters' all-gather) while another has stopped, and the caller's agreement prints
// the cause, not a peer's symptom.
void agree_on_reads(const CheckpointState& state, const std::string& error) {
  comm::Communicator& world = state.topology.host_world();
  // Max of -rank: the lowest failing rank (-size when none failed).
  float first =
      error.empty() ? -static_cast<float>(world.size()) : -static_cast<float>(world.rank());
  world.all_reduce(Tensor(&first, {1}, DType::F32), comm::ReduceOp::Max);
  const int root = static_cast<int>(-first);
  if (root == world.size()) return;
  constexpr int kChars = 1024;  // one line; longer ones are cut
  std::vector<float> text(kChars, 0.f);
  if (world.rank() == root)
    for (size_t i = 0; i < std::min<size_t>(error.size(), kChars); ++i)
      text[i] = static_cast<float>(static_cast<unsigned char>(error[i]));
  world.broadcast(Tensor(text.data(), {kChars}, DType::F32), root);
  std::string line;
  for (float c : text) {
    if (c == 0.f) break;
    line += static_cast<char>(static_cast<unsigned char>(c));
  }
  throw InputError(error.empty() ? line : error);  // a failing rank's own cause
}

}  // namespace

std::vector<std::string> check_checkpoint_model(const nlohmann::json& meta, const GptConfig& run,
                                                const std::string& where) {
  ZT_REQUIRE(meta.is_object() && meta.contains("model"), "'{}' has no model", where);
  const GptConfig saved = model_from_json(meta["model"], where);
  struct Shape {
    const char* flag;
    int saved, run;
  };
  // The padded vocabulary follows tp (Megatron pads to 128·tp): a reshaping load handles it.
  for (const Shape& f : {Shape{"num-layers", saved.num_layers, run.num_layers},
                         Shape{"hidden-size", saved.hidden, run.hidden},
                         Shape{"num-attention-heads", saved.heads, run.heads},
                         Shape{"vocab-size", saved.vocab_size, run.vocab_size}})
    ZT_REQUIRE(f.saved == f.run,
               "checkpoint '{}' holds model of --{} {}, this run {}: a load keeps the "
               "parameters' shapes",
               where, f.flag, f.saved, f.run);
  // The architecture choices that change the parameters or what they compute.
  struct Choice {
    const char* flag;
    std::string saved, run;
  };
  auto name = [](const GptConfig& c, int which) -> std::string {
    switch (which) {
      case 0:
        return c.rope() ? "rope" : "learned_absolute";
      case 1:
        return c.rmsnorm() ? "RMSNorm" : "LayerNorm";
      case 2:
        return c.swiglu ? "on" : "off";
      case 3:
        return std::to_string(c.ffn_hidden());
      case 4:
        return std::to_string(c.kv_heads());
      case 5:
        return c.untie_embeddings ? "on" : "off";
      default:
        return c.add_bias_linear ? "on" : "off";
    }
  };
  const char* flags[] = {"position-embedding-type",
                         "normalization",
                         "swiglu",
                         "ffn-hidden-size",
                         "num-query-groups",
                         "untie-embeddings-and-output-weights",
                         "linear biases"};
  for (int k = 0; k < 7; ++k)
    ZT_REQUIRE(name(saved, k) == name(run, k),
               "checkpoint '{}' holds a model of --{} {}, this run {}: a load keeps the "
               "architecture",
               where, flags[k], name(saved, k), name(run, k));
  ZT_REQUIRE(run.seq_length <= saved.seq_length,
             "--seq-length {} exceeds the {} learned positions of the checkpoint '{}'",
             run.seq_length, saved.seq_length, where);
  return changed_model_settings(saved, run);
}

LoopState load_checkpoint(const std::string& dir, const CheckpointState& state,
                          LoadAccounting* accounting, const LoadScope& scope) {
  ReadResult read;
  std::string error;
  try {
    read = read_checkpoint(dir, state, accounting, scope);
  } catch (const InputError& e) {
    error = e.what();
  }
  agree_on_reads(state, error);
  state.optimizer.after_load(read.adam_step);
  world_barrier(state);
  return read.loop;
}

}  // namespace zt
