// libFuzzer target for a checkpoint handed to `zerotron train --load` or `zerotron export`: its
// `latest`, meta.json and shard header bytes, through the real load path (load_checkpoint into a
// one-process Trainer, which reads `latest` and meta.json, checks them against the model and
// layout and reads every shard element it needs; then export_model, the export command itself,
// which reads every tensor through SavedCheckpoint). Any bytes must end in a load or InputError;
// any other exception, a crash, a sanitizer report or an allocation past libFuzzer's malloc
// limit is a finding.
//
// Input: a template byte, `latest`, a 0 byte, meta.json, a 0 byte, the first bytes of the shard
// file. Each execution writes DIR/latest, DIR/iter_0000003/meta.json and
// DIR/iter_0000003/mp_rank_00_dp_000.bin: those bytes, then the rest of a real shard, so the
// fuzzer controls the header and its block checksums while the data stay real. Two shards are
// made at start-up (the template byte, even or odd, picks one): the tiny model saved at ZeRO
// stage 0 by save_checkpoint (the trainer's own layout: the in-place load), and the same states
// as a stage-1 shard of one data-parallel rank, written by ShardWriter in the partition's order
// (a stage-1 save needs a data-parallel communicator, which this one-process harness has not;
// loading it goes through the partition and the reshaping path). In meta.json the token @crc
// stands for the CRC-32 of the shard's first 4096 bytes (the tiny model's header), so mutated
// headers get past the header checksum to the field-by-field checks, as a hostile user who
// edits meta.json to match would.
//
// The committed seeds (regressions/checkpoint_fuzz/stage0 and stage1) are the two checkpoints,
// written by this harness (*_pipeline_fields: the same written since meta.json records the
// pipeline size and model chunks, so mutations reach those fields):
//   ZT_CHECKPOINT_FUZZ_SEEDS=tests/fuzz/regressions/checkpoint_fuzz
//   build/bin/checkpoint_fuzz_replay x
// Run by scripts/fuzz.sh; CTest replays the seeds (fuzz.checkpoint_fuzz).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "apps/commands.h"
#include "src/checkpoint/checkpoint.h"
#include "src/checkpoint/file.h"
#include "src/checkpoint/reader.h"
#include "src/comm/self_communicator.h"
#include "src/core/error.h"
#include "src/train/trainer.h"
#include "src/zero/partition.h"

namespace {
namespace fs = std::filesystem;

constexpr int kIteration = 3;
constexpr std::string_view kCrcToken = "@crc";
constexpr size_t kHeaderBytes = 4096;  // the tiny model's shard header: one page

zt::TrainOptions tiny() {
  zt::TrainOptions o;
  o.num_layers = 1;
  o.hidden_size = 8;
  o.num_attention_heads = 2;
  o.seq_length = 4;
  o.vocab_size = 20;
  o.make_vocab_size_divisible_by = 8;
  o.micro_batch_size = 1;
  o.train_iters = 1;
  o.mock_data = true;
  o.reduce_bucket_size = 100;
  return o;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `text` with every `from` replaced by `to` (built anew: GCC 12's -Wrestrict misfires on
// std::string::replace).
std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  for (size_t at; (at = text.find(from)) != std::string_view::npos;
       text.remove_prefix(at + from.size()))
    out.append(text.substr(0, at)).append(to);
  return out.append(text);
}

void put(const fs::path& p, std::string_view bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), std::ssize(bytes));
}

// One shard a checkpoint may hold, and the seed input that describes it.
struct Template {
  std::string shard, seed;
};

// meta.json with the shard's header CRC as @crc, then the seed: template byte, latest, meta,
// the header's first 256 bytes (the fixed words and the block checksums).
std::string seed_of(char which, const nlohmann::json& meta, const std::string& shard) {
  nlohmann::json m = meta;
  for (auto& [name, entry] : m["shards"].items()) entry["header_crc32"] = 0;
  const std::string text =
      replace_all(m.dump(2), "\"header_crc32\": 0", "\"header_crc32\": " + std::string(kCrcToken));
  std::string seed(1, which);
  seed.append(zt::iteration_name(kIteration)).append(1, '\0').append(text).append(1, '\0');
  return seed.append(shard.substr(0, 256));
}

struct Fixture {
  fs::path root, dir, iter, out;
  std::string shard_name = zt::shard_file_name(0, 0);
  zt::MemoryPool pool{zt::make_host_allocator()};
  zt::comm::SelfWorld alone;  // one process, no MPI
  zt::Trainer trainer{tiny(), pool, alone.topology()};
  Template stage0, stage1;

  Fixture() {
    const char* shm = "/dev/shm";
    root = fs::path(fs::is_directory(shm) ? shm : fs::temp_directory_path()) /
           ("zt_checkpoint_fuzz_" + std::to_string(getpid()));
    fs::remove_all(root);
    dir = root / "ckpt";
    iter = dir / zt::iteration_name(kIteration);
    out = root / "export" / "model.safetensors";
    make_templates();
    if (const char* seeds = std::getenv("ZT_CHECKPOINT_FUZZ_SEEDS")) {
      fs::create_directories(seeds);
      put(fs::path(seeds) / "stage0", stage0.seed);
      put(fs::path(seeds) / "stage1", stage1.seed);
    }
    fs::create_directories(iter);
  }
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }

  void make_templates() {
    zt::Trainer::LoopState s = trainer.loop_state();
    s.iteration = kIteration;
    trainer.restore_loop_state(s);
    const fs::path saved = root / "saved";
    const fs::path saved_iter = fs::path(trainer.save_checkpoint(saved.string()));
    const nlohmann::json meta = nlohmann::json::parse(slurp(saved_iter / "meta.json"));
    stage0.shard = slurp(saved_iter / shard_name);
    stage0.seed = seed_of('\0', meta, stage0.shard);

    // The same states in the order of a stage-1 shard of one rank: each segment of the
    // partition from its place in the layout, the padding zero.
    const zt::ParamLayout& layout = trainer.optimizer().layout();
    const zt::Partition part(layout, 1, 0, tiny().reduce_bucket_size);
    zt::ShardHeader h;
    h.zero_stage = 1;
    h.iteration = kIteration;
    h.partition_unit = tiny().reduce_bucket_size;
    h.layout_numel = layout.numel();
    h.shard_numel = part.shard_numel();
    const fs::path path = root / "stage1.bin";
    zt::ShardWriter w(path.string(), h);
    for (int k = 0; k < zt::ShardHeader::kTensors; ++k) {
      std::vector<float> state(static_cast<size_t>(h.shard_numel), 0.f);
      const char* saved_state = stage0.shard.data() + kHeaderBytes + size_t(k) * layout.numel() * 4;
      for (const zt::ShardSegment& seg : part.segments())
        std::memcpy(state.data() + seg.shard_offset, saved_state + seg.layout_offset * 4,
                    static_cast<size_t>(seg.len) * 4);
      w.append(state.data(), state.size() * 4);
    }
    w.finish();
    stage1.shard = slurp(path);
    nlohmann::json meta1 = meta;
    meta1["layout"]["zero_stage"] = 1;
    meta1["shards"][shard_name]["bytes"] = h.file_bytes();
    stage1.seed = seed_of('\1', meta1, stage1.shard);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture f;
  if (size == 0) return 0;
  const Template& t = data[0] % 2 == 0 ? f.stage0 : f.stage1;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t a = in.find('\0');
  const size_t b = a == std::string_view::npos ? a : in.find('\0', a + 1);
  if (b == std::string_view::npos) return 0;
  const std::string_view latest = in.substr(0, a), header = in.substr(b + 1);

  std::string file(header);
  if (header.size() < t.shard.size()) file += t.shard.substr(header.size());
  const std::string crc =
      std::to_string(zt::crc32(file.data(), std::min(file.size(), kHeaderBytes)));
  const std::string meta = replace_all(in.substr(a + 1, b - a - 1), kCrcToken, crc);
  put(f.dir / "latest", latest);
  put(f.iter / "meta.json", meta);
  put(f.iter / f.shard_name, file);

  try {
    f.trainer.load_checkpoint(f.dir.string());
  } catch (const zt::InputError&) {
  }
  const std::string load = f.dir.string(), output = f.out.string();
  const std::vector<std::string_view> args = {"--load", load, "--output", output};
  try {
    zt::app::export_model(args);
  } catch (const zt::InputError&) {
  }
  return 0;
}
