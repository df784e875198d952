#include "src/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "src/core/error.h"
#include "src/train/checkpoint_dir.h"
#include "src/train/checkpoint_file.h"
#include "src/zero/partition.h"

namespace zt {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'Z', 'T', 'C', 'K', 'P', 'T', '0', '1'};
// No rank holds more than this in one shard file (16 bytes of model state per parameter).
constexpr uint64_t kMaxShardBytes = uint64_t{1} << 44;

std::string shard_name(int tp_rank, int dp_rank) {
  return fmt::format("mp_rank_{:02d}_dp_{:03d}.bin", tp_rank, dp_rank);
}

struct Identity {
  int tp_rank = 0, dp_rank = 0, tp = 1, dp = 1;
  bool writes = true;
  int shard_dp = 0;  // the dp index whose file holds this rank's states
};

Identity identity(Trainer& t) {
  Identity id;
  if (comm::Topology* topo = t.topology()) {
    id.tp_rank = topo->tp_rank();
    id.dp_rank = topo->dp_rank();
    id.tp = topo->tp_size();
    id.dp = topo->dp_size();
  }
  const bool replicated = t.optimizer().state_replicated_over_dp();
  id.shard_dp = replicated ? 0 : id.dp_rank;
  id.writes = !replicated || id.dp_rank == 0;
  return id;
}

void barrier(Trainer& t) {
  if (t.topology() != nullptr) t.topology()->host_world().barrier();
}

nlohmann::json model_json(const Trainer& t) {
  const GptConfig& c = t.config();
  return {{"num_layers", c.num_layers},
          {"hidden_size", c.hidden},
          {"num_attention_heads", c.heads},
          {"seq_length", c.seq_length},
          {"vocab_size", c.vocab_size},
          {"padded_vocab_size", c.padded_vocab_size},
          {"attention_dropout", c.attention_dropout},
          {"hidden_dropout", c.hidden_dropout}};
}

// A model-state tensor into the file: directly where the host reads the device's memory, else
// through the trainer's host chunk, piece by piece.
void write_tensor(Fd& f, const Tensor& s, Trainer& t) {
  if (t.host_chunk() == nullptr) {
    f.write(s.data(), s.bytes());
    return;
  }
  const size_t room = t.host_chunk_bytes();
  const auto* src = static_cast<const char*>(s.data());
  for (size_t at = 0; at < s.bytes(); at += room) {
    const size_t n = std::min(room, s.bytes() - at);
    t.context().backend().copy_to_host(t.host_chunk(), src + at, n);
    f.write(t.host_chunk(), n);
  }
}

// One shard file, checked against meta.json's CRC-32 and the expected tensor sizes.
std::vector<std::vector<float>> read_shard(const fs::path& iter_dir, const nlohmann::json& meta,
                                           const std::string& file,
                                           const std::vector<int64_t>& sizes) {
  const fs::path path = iter_dir / file;
  uint64_t size = 0;
  const Fd fd = open_checkpoint_file(iter_dir, file, kMaxShardBytes, size);
  std::vector<char> bytes(size);
  fd.pread(bytes.data(), size, 0);
  ZT_REQUIRE(meta.at("shards").contains(file), "'{}' lists no shard '{}'",
             (iter_dir / "meta.json").string(), file);
  ZT_REQUIRE(crc32(bytes.data(), bytes.size()) == meta["shards"][file].get<uint32_t>(),
             "checkpoint shard '{}' is corrupt: its CRC-32 does not match meta.json",
             path.string());
  size_t at = sizeof kMagic + 8 + 8 * sizes.size();
  ZT_REQUIRE(bytes.size() >= at && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0,
             "'{}' is not a zerotron shard", path.string());
  uint64_t count = 0;
  std::memcpy(&count, bytes.data() + sizeof kMagic, 8);
  ZT_REQUIRE(count == sizes.size(), "'{}' holds {} tensors, expected {}", path.string(), count,
             sizes.size());
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    uint64_t n = 0;
    std::memcpy(&n, bytes.data() + sizeof kMagic + 8 + 8 * i, 8);
    ZT_REQUIRE(n == static_cast<uint64_t>(sizes[i]), "'{}': tensor {} has {} elements, expected {}",
               path.string(), i, n, sizes[i]);
    ZT_REQUIRE(at + n * 4 <= bytes.size(), "'{}' is truncated", path.string());
    out.emplace_back(n);
    std::memcpy(out.back().data(), bytes.data() + at, n * 4);
    at += n * 4;
  }
  ZT_REQUIRE(at == bytes.size(), "'{}' has {} trailing bytes", path.string(), bytes.size() - at);
  return out;
}

}  // namespace

GptConfig config_from_json(const nlohmann::json& j) {
  GptConfig c;
  c.num_layers = j.at("num_layers").get<int>();
  c.hidden = j.at("hidden_size").get<int>();
  c.heads = j.at("num_attention_heads").get<int>();
  c.seq_length = j.at("seq_length").get<int>();
  c.vocab_size = j.at("vocab_size").get<int>();
  c.padded_vocab_size = j.at("padded_vocab_size").get<int>();
  c.attention_dropout = j.at("attention_dropout").get<float>();
  c.hidden_dropout = j.at("hidden_dropout").get<float>();
  return c;
}

// Every saved shard of every saved rank, re-assembled into whole tensors by name (through the
// saved layout's full_index and partition).
std::map<std::string, WholeTensor> read_whole_tensors(const std::string& iter_dir_s,
                                                      const nlohmann::json& meta) {
  const fs::path iter_dir(iter_dir_s);
  const GptConfig saved = config_from_json(meta.at("model"));
  const auto& lay = meta.at("layout");
  const int tp_s = lay.at("tensor_model_parallel_size").get<int>();
  const int dp_s = lay.at("data_parallel_size").get<int>();
  const int stage_s = lay.at("zero_stage").get<int>();
  const int64_t unit = meta.at("partition_unit_elems").get<int64_t>();
  std::map<std::string, WholeTensor> whole;
  for (int r = 0; r < tp_s; ++r) {
    const ParamLayout L = ParamLayout::gpt(saved, tp_s, r);
    const int64_t n = L.numel();
    std::array<std::vector<float>, 3> local;
    if (stage_s == 0) {
      auto s = read_shard(iter_dir, meta, shard_name(r, 0), {n, n, n});
      for (size_t k = 0; k < 3; ++k) local[k] = std::move(s[k]);
    } else {
      for (auto& l : local) l.assign(static_cast<size_t>(n), 0.0f);
      for (int d = 0; d < dp_s; ++d) {
        const Partition P(L, dp_s, d, unit);
        const int64_t m = P.shard_numel();
        const auto s = read_shard(iter_dir, meta, shard_name(r, d), {m, m, m});
        for (const auto& seg : P.segments())
          for (size_t k = 0; k < 3; ++k)
            std::copy_n(s[k].begin() + seg.shard_offset, seg.len,
                        local[k].begin() + seg.layout_offset);
      }
    }
    for (const auto& p : L.params()) {
      WholeTensor& w = whole[p.name];
      if (w.v[0].empty()) {
        w.shape = p.full_shape;
        for (auto& v : w.v) v.assign(static_cast<size_t>(p.full_numel()), 0.0f);
      }
      for (int64_t i = 0; i < p.numel(); ++i)
        for (size_t k = 0; k < 3; ++k)
          w.v[k][static_cast<size_t>(p.full_index(i))] =
              local[k][static_cast<size_t>(p.offset + i)];
    }
  }
  return whole;
}

namespace {

// The universal path: the whole tensors cut for this rank's layout.
void load_reshaped(const fs::path& iter_dir, const nlohmann::json& meta, Trainer& t) {
  const std::map<std::string, WholeTensor> whole = read_whole_tensors(iter_dir.string(), meta);
  const ParamLayout& C = t.optimizer().layout();
  const auto n = static_cast<size_t>(C.numel());
  std::array<std::vector<float>, 3> cur{std::vector<float>(n), std::vector<float>(n, 0.0f),
                                        std::vector<float>(n, 0.0f)};
  t.optimizer().gather_master(cur[0].data());  // rows no checkpoint covers keep their values
  for (const auto& p : C.params()) {
    const auto it = whole.find(p.name);
    ZT_REQUIRE(it != whole.end(), "checkpoint '{}' has no tensor '{}'", iter_dir.string(), p.name);
    const WholeTensor& w = it->second;
    // Only the vocabulary padding (a multiple of 128·tp) may differ; its rows carry no signal.
    const bool same = w.shape == p.full_shape;
    ZT_REQUIRE(
        same || (p.full_shape.rank() == 2 && w.shape.rank() == 2 && w.shape[1] == p.full_shape[1]),
        "checkpoint tensor '{}' has shape {}, this model {}", p.name, w.shape.str(),
        p.full_shape.str());
    for (int64_t i = 0; i < p.numel(); ++i) {
      const int64_t f = p.full_index(i);
      int64_t src = f;
      if (!same) {
        const int64_t row = f / p.full_shape[1], col = f % p.full_shape[1];
        if (row >= w.shape[0]) continue;
        src = row * w.shape[1] + col;
      }
      for (size_t k = 0; k < 3; ++k)
        cur[k][static_cast<size_t>(p.offset + i)] = w.v[k][static_cast<size_t>(src)];
    }
  }
  t.optimizer().set_state_from_layout_order(cur[0].data(), cur[1].data(), cur[2].data());
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
  uint32_t crc = 0;
  if (id.writes) {
    Fd f = Fd::create((tmp_dir / shard_name(id.tp_rank, id.shard_dp)).string());
    const std::vector<Tensor> state = t.optimizer().owned_state();
    const uint64_t count = state.size();
    f.write(kMagic, sizeof kMagic);
    f.write(&count, sizeof count);
    for (const Tensor& s : state) {
      const uint64_t n = static_cast<uint64_t>(s.numel());
      f.write(&n, sizeof n);
    }
    for (const Tensor& s : state) write_tensor(f, s, t);
    f.sync();
    crc = f.crc();
  }
  if (hooks.after_shard) hooks.after_shard();
  // Every rank's (writes, tp rank, shard dp, CRC-32 in two exact 16-bit halves) to everyone; the
  // all-gather is also the point where every shard is on disk.
  constexpr int kFields = 5;
  const int ranks = t.topology() != nullptr ? t.topology()->world_size() : 1;
  const int me = t.topology() != nullptr ? t.topology()->rank() : 0;
  std::vector<float> written(static_cast<size_t>(ranks * kFields));
  const float mine[kFields] = {id.writes ? 1.0f : 0.0f, static_cast<float>(id.tp_rank),
                               static_cast<float>(id.shard_dp), static_cast<float>(crc >> 16),
                               static_cast<float>(crc & 0xffffu)};
  std::copy(mine, mine + kFields, written.begin() + me * kFields);
  if (t.topology() != nullptr)
    t.topology()->host_world().all_gather(Tensor(written.data(), {ranks * kFields}, DType::F32));
  if (root) {
    nlohmann::json meta;
    meta["format"] = "zerotron-checkpoint-1";
    meta["iteration"] = loop.iteration;
    meta["consumed_train_samples"] = t.consumed_train_samples();
    meta["consumed_valid_samples"] = loop.consumed_valid;
    meta["model"] = model_json(t);
    meta["layout"] = {{"tensor_model_parallel_size", id.tp},
                      {"data_parallel_size", id.dp},
                      {"zero_stage", t.optimizer().stage()},
                      {"precision", std::string(dtype_name(t.optimizer().working_dtype()))}};
    meta["adam_step"] = t.optimizer().adam_step();
    // The partition unit (Partition's constant bucket): what a reshaping load needs to find
    // every element in the stage 1-3 shards.
    meta["partition_unit_elems"] = t.options().reduce_bucket_size;
    meta["loss_scaler"] = {{"scale", loop.scaler.scale},
                           {"growth_tracker", loop.scaler.growth_tracker},
                           {"hysteresis_left", loop.scaler.hysteresis_left}};
    // Dropout and the data order are pure functions of (seed, sample index): the seed and the
    // consumed samples are the whole random state.
    meta["seed"] = t.options().seed;
    nlohmann::json shards = nlohmann::json::object();
    for (int r = 0; r < ranks; ++r) {
      const float* w = written.data() + r * kFields;
      if (w[0] == 0.0f) continue;
      shards[shard_name(static_cast<int>(w[1]), static_cast<int>(w[2]))] =
          (static_cast<uint32_t>(w[3]) << 16) | static_cast<uint32_t>(w[4]);
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
  const std::string text = read_small_file(iter_dir, "meta.json", kMaxMetaBytes);
  try {
    meta = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(
        fmt::format("'{}' is not valid JSON: {}", (iter_dir / "meta.json").string(), e.what()));
  }
  ZT_REQUIRE(meta.is_object() && meta.contains("iteration") &&
                 meta["iteration"].is_number_integer() &&
                 iteration_name(meta["iteration"].get<int64_t>()) == name,
             "'{}' does not record iteration {}", (iter_dir / "meta.json").string(), name);
  return iter_dir.string();
}

std::string latest_iteration_dir(const std::string& dir, nlohmann::json& meta) {
  return checkpoint_iteration_dir(dir, std::nullopt, meta);
}

int load_checkpoint(const std::string& dir, Trainer& t) {
  nlohmann::json meta;
  const fs::path iter_dir = latest_iteration_dir(dir, meta);
  const Identity id = identity(t);
  const nlohmann::json want_layout = {
      {"tensor_model_parallel_size", id.tp},
      {"data_parallel_size", id.dp},
      {"zero_stage", t.optimizer().stage()},
      {"precision", std::string(dtype_name(t.optimizer().working_dtype()))}};
  nlohmann::json saved_model = meta.at("model"), want_model = model_json(t);
  saved_model.erase("padded_vocab_size");  // follows tp (Megatron pads to 128·tp)
  want_model.erase("padded_vocab_size");
  ZT_REQUIRE(saved_model == want_model, "checkpoint '{}' holds model {} but this run is {}",
             iter_dir.string(), meta.at("model").dump(), model_json(t).dump());
  if (meta.at("layout") == want_layout) {
    std::vector<Tensor> state = t.optimizer().owned_state();
    std::vector<int64_t> sizes;
    for (const Tensor& s : state) sizes.push_back(s.numel());
    const auto loaded = read_shard(iter_dir, meta, shard_name(id.tp_rank, id.shard_dp), sizes);
    for (size_t i = 0; i < state.size(); ++i)
      t.context().backend().copy_to_device(state[i].f32(), loaded[i].data(), loaded[i].size() * 4);
  } else {
    load_reshaped(iter_dir, meta, t);
  }
  t.optimizer().after_load(meta.at("adam_step").get<int64_t>());
  Trainer::LoopState loop;
  loop.iteration = meta.at("iteration").get<int>();
  loop.consumed_valid = meta.at("consumed_valid_samples").get<int64_t>();
  loop.scaler.scale = meta["loss_scaler"].at("scale").get<double>();
  loop.scaler.growth_tracker = meta["loss_scaler"].at("growth_tracker").get<int>();
  loop.scaler.hysteresis_left = meta["loss_scaler"].at("hysteresis_left").get<int>();
  t.restore_loop_state(loop);
  barrier(t);
  return loop.iteration;
}

}  // namespace zt
