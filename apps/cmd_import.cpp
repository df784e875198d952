// zerotron import --input DIR|model.safetensors --save DIR [layout flags]: Hugging Face GPT-2,
// Llama, Mixtral or Qwen2-MoE weights (config.json beside them; a directory: its model.safetensors,
// or the shards its model.safetensors.index.json names) into a zerotron checkpoint at iteration 0,
// for any layout, so a model trained elsewhere continues training or is fine-tuned here. The
// inverse of export. One process, no MPI: every shard file of the layout is written in turn,
// streaming (the input is mapped, never copied whole; each shard goes out through a constant
// chunk).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/ranges.h>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "apps/commands.h"
#include "src/checkpoint/file.h"
#include "src/checkpoint/hf_llama.h"
#include "src/checkpoint/writer.h"
#include "src/config/command_flags.h"
#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/core/json_input.h"
#include "src/core/progress.h"

namespace zt::app {
namespace {

namespace fs = std::filesystem;

// A read-only mapping of the input file, unmapped on scope exit.
class Mapped {
 public:
  explicit Mapped(const std::string& path) {
    const RegularFile f = open_regular_file(AT_FDCWD, path.c_str());  // never blocks
    ZT_REQUIRE(f.error == 0, "import: cannot open --input '{}': {}", path, std::strerror(f.error));
    ZT_REQUIRE(f.fd && f.size >= 8, "import: --input '{}' is not a safetensors file", path);
    size_ = static_cast<size_t>(f.size);
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, f.fd.get(), 0);
    ZT_REQUIRE(p != MAP_FAILED, "import: cannot map --input '{}': {}", path, std::strerror(errno));
    data_ = static_cast<const char*>(p);
  }
  ~Mapped() { ::munmap(const_cast<char*>(data_), size_); }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// Rows [row_begin, row_begin + rows) of zerotron's tensor, read from one of the file's tensors
// (transposed for Conv1D weights).
struct Source {
  const SafetensorsTensor* tensor;
  bool transpose;  // stored [cols, rows] (Conv1D): our element (r, c) is at c * rows + r
  int64_t row_begin, rows, cols;
};

// The safetensors files of --input: the file itself, or a directory's model.safetensors, or the
// shards its model.safetensors.index.json's weight_map names.
std::vector<fs::path> input_files(const fs::path& input) {
  if (!fs::is_directory(input)) return {input};
  if (fs::exists(input / "model.safetensors")) return {input / "model.safetensors"};
  const std::string index = "model.safetensors.index.json";
  ZT_REQUIRE(fs::exists(input / index), "import: --input '{}' has neither model.safetensors nor {}",
             input.string(), index);
  const nlohmann::json j =
      parse_json_input(read_small_file(input, index, uint64_t{64} << 20), (input / index).string());
  const auto map = j.is_object() ? j.find("weight_map") : j.end();
  ZT_REQUIRE(map != j.end() && map->is_object(), "import: '{}' has no 'weight_map' object",
             (input / index).string());
  std::set<std::string> names;
  for (const auto& [tensor, file] : map->items()) {
    ZT_REQUIRE(
        file.is_string() && fs::path(file.get<std::string>()).filename() == file.get<std::string>(),
        "import: '{}': tensor '{}' names no file of the directory ({})", (input / index).string(),
        excerpt(tensor), json_excerpt(file));
    names.insert(file.get<std::string>());
  }
  std::vector<fs::path> files;
  for (const std::string& n : names) files.push_back(input / n);
  return files;
}

}  // namespace

int import_model(Args args) {
  const std::vector<FlagSpec> specs = {
      {"--input", "PATH",
       "Hugging Face GPT-2, Llama, Mixtral or Qwen2-MoE model: its directory, or its "
       "safetensors file (config.json beside it)",
       true},
      {"--save", "DIR", "checkpoint directory to create (iteration 0)", true},
      {"--tensor-model-parallel-size", "N", "layout to write: tensor-parallel size (default 1)"},
      {"--data-parallel-size", "N", "layout to write: data-parallel size (default 1)"},
      {"--zero-stage", "S", "layout to write: ZeRO stage 0-3 (default 0)"},
      {"--reduce-bucket-size", "N",
       "partition unit in elements, as the training run's --reduce-bucket-size (default "
       "500000000)"},
      {"--make-vocab-size-divisible-by", "N", "vocabulary padding, as in training (default 128)"},
  };
  auto flags = ParsedFlags::parse("import", specs, args);
  if (!flags) return 0;
  CheckpointLayout lay;
  lay.tp = static_cast<int>(flags->integer("--tensor-model-parallel-size", 1, 1, 4096));
  lay.dp = static_cast<int>(flags->integer("--data-parallel-size", 1, 1, 1 << 20));
  lay.stage = static_cast<int>(flags->integer("--zero-stage", 0, 0, 3));
  lay.partition_unit = flags->integer("--reduce-bucket-size", 500'000'000, 1, int64_t{1} << 40);
  const int divisible =
      static_cast<int>(flags->integer("--make-vocab-size-divisible-by", 128, 1, 1 << 20));
  const fs::path input = flags->str("--input");
  std::error_code ec;
  ZT_REQUIRE(fs::exists(input, ec), "import: --input '{}' does not exist", input.string());
  const fs::path config = (fs::is_directory(input) ? input : input.parent_path()) / "config.json";
  const std::string config_text =
      read_small_file(config.parent_path(), config.filename().string(), uint64_t{1} << 20);
  GptConfig model = hf_model_from_config(config_text, config.string());
  // Recorded in the checkpoint for an export to write back.
  const nlohmann::json token_ids =
      hf_token_ids(config_text, model.vocab_size, fmt::format("import: '{}'", config.string()));
  model.padded_vocab_size = padded_vocab_size(model.vocab_size, divisible, lay.tp);
  validate_architecture(model);
  validate_tensor_parallel(model, lay.tp);
  lay.model = model;

  std::vector<std::unique_ptr<Mapped>> files;
  std::map<std::string, SafetensorsTensor> tensors;
  for (const fs::path& path : input_files(input)) {
    files.push_back(std::make_unique<Mapped>(path.string()));
    for (auto& [name, t] :
         read_safetensors({files.back()->data(), files.back()->size()}, path.string()))
      ZT_REQUIRE(tensors.emplace(name, t).second, "import: '{}': tensor '{}' is in two files",
                 input.string(), excerpt(name));
  }

  // Every tensor zerotron needs, checked (dtype, shape) before anything is written; the file's
  // own checks (offsets inside the data, length = shape) were read_safetensors'.
  const ParamLayout full = ParamLayout::gpt(model, 1, 0);
  std::map<std::string, std::vector<Source>> sources;
  for (const HfTensor& m : hf_tensors(model, fmt::format("import: '{}'", config.string()))) {
    const auto it = tensors.find(m.theirs);
    ZT_REQUIRE(it != tensors.end(), "import: '{}' has no tensor '{}'", input.string(), m.theirs);
    const SafetensorsTensor& t = it->second;
    ZT_REQUIRE(t.floating(), "import: '{}': tensor '{}' has dtype '{}', expected F32, BF16 or F16",
               input.string(), m.theirs, t.dtype);
    const ParamSpec& p = full.find(m.ours);
    const int64_t rows = m.rows >= 0                  ? m.rows
                         : m.ours == "embedding.word" ? model.vocab_size
                                                      : p.full_shape[0];
    const int64_t cols = p.full_shape.rank() == 2 ? p.full_shape[1] : 1;
    const std::vector<int64_t> want = p.full_shape.rank() == 1 ? std::vector<int64_t>{rows}
                                      : m.transpose            ? std::vector<int64_t>{cols, rows}
                                                               : std::vector<int64_t>{rows, cols};
    ZT_REQUIRE(t.shape == want,
               "import: '{}': tensor '{}' has shape [{}], config.json makes it [{}]",
               input.string(), m.theirs, fmt::join(t.shape, ", "), fmt::join(want, ", "));
    sources[m.ours].push_back({&t, m.transpose, m.row_begin, rows, cols});
  }
  const std::string save = flags->str("--save");
  // The bytes counted are the parameters read for each shard file (every file's share of them).
  Progress progress(fmt::format("importing {} into {}", input.string(), save), 0);
  write_checkpoint(
      save, lay,
      [&](const ParamSpec& p, int64_t f, int64_t n, float* dst) {
        progress.add(static_cast<uint64_t>(n) * 4);
        const std::vector<Source>& from = sources.at(p.name);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t at = f + i, row = at / from.front().cols;
          const Source* s = nullptr;
          for (const Source& c : from)
            if (row >= c.row_begin && row < c.row_begin + c.rows) s = &c;
          if (s == nullptr) {  // a row of the vocabulary padding
            dst[i] = 0;
            continue;
          }
          const int64_t local = at - s->row_begin * s->cols;
          dst[i] =
              s->tensor->at(s->transpose ? (local % s->cols) * s->rows + local / s->cols : local);
        }
      },
      token_ids);
  fmt::print(
      "zerotron: imported {} ({} parameters, {} layers, hidden {}) into {} at iteration 0 as tp {} "
      "x dp {}, ZeRO stage {}\n",
      input.string(), model.num_parameters(), model.num_layers, model.hidden, save, lay.tp, lay.dp,
      lay.stage);
  return 0;
}

}  // namespace zt::app
