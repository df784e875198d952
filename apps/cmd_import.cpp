// zerotron import --input model.safetensors --save DIR [layout flags]: Hugging Face GPT-2
// weights (config.json beside them) into a zerotron checkpoint at iteration 0, for any layout,
// so a model trained elsewhere continues training or is fine-tuned here. The inverse of export.
// One process, no MPI: every shard file of the layout is written in turn, streaming (the input
// is mapped, never copied whole; each shard goes out through a constant chunk).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "apps/cli_flags.h"
#include "src/core/half.h"
#include "src/train/checkpoint_file.h"
#include "src/train/checkpoint_writer.h"
#include "src/train/hf_gpt2.h"

namespace zt::app {
namespace {

namespace fs = std::filesystem;

// A read-only mapping of the input file, unmapped on scope exit.
class Mapped {
 public:
  explicit Mapped(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    ZT_REQUIRE(fd >= 0, "import: cannot open --input '{}': {}", path, std::strerror(errno));
    Fd owner(fd, path);
    struct stat st {};
    ZT_REQUIRE(::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 8,
               "import: --input '{}' is not a safetensors file", path);
    size_ = static_cast<size_t>(st.st_size);
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
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

struct Source {
  const char* data;  // first element
  DType dtype;
  bool transpose;      // stored [cols, rows] (Conv1D): our element (r, c) is at c * rows + r
  int64_t rows, cols;  // zerotron's full shape (rows of wte: the real vocabulary)
};

float element(const Source& s, int64_t i) {
  switch (s.dtype) {
    case DType::F32: {
      float v = 0;
      std::memcpy(&v, s.data + 4 * i, 4);
      return v;
    }
    case DType::BF16: {
      bf16 v;
      std::memcpy(&v.bits, s.data + 2 * i, 2);
      return to_float(v);
    }
    default: {
      fp16 v;
      std::memcpy(&v.bits, s.data + 2 * i, 2);
      return to_float(v);
    }
  }
}

int cfg_int(const nlohmann::json& c, const char* key, const std::string& where) {
  ZT_REQUIRE(c.contains(key) && c[key].is_number_integer() && c[key].get<int64_t>() > 0 &&
                 c[key].get<int64_t>() < (int64_t{1} << 24),
             "import: '{}' needs a positive integer '{}'", where, key);
  return c[key].get<int>();
}

double cfg_prob(const nlohmann::json& c, const char* key) {
  if (!c.contains(key) || !c[key].is_number()) return 0.1;  // GPT2Config's default
  const double v = c[key].get<double>();
  ZT_REQUIRE(v >= 0 && v < 1, "import: config.json '{}' is {}, outside [0, 1)", key, v);
  return v;
}

// The model config.json describes, refused where zerotron's GPT differs from it.
GptConfig read_config(const fs::path& path) {
  const std::string where = path.string();
  nlohmann::json c;
  try {
    c = nlohmann::json::parse(
        read_small_file(path.parent_path(), path.filename().string(), uint64_t{1} << 20));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("import: '{}' is not valid JSON: {}", where, e.what()));
  }
  ZT_REQUIRE(c.is_object(), "import: '{}' must hold a JSON object", where);
  GptConfig g;
  g.hidden = cfg_int(c, "n_embd", where);
  g.num_layers = cfg_int(c, "n_layer", where);
  g.heads = cfg_int(c, "n_head", where);
  g.vocab_size = cfg_int(c, "vocab_size", where);
  g.seq_length = cfg_int(c, "n_positions", where);
  g.hidden_dropout = static_cast<float>(cfg_prob(c, "resid_pdrop"));
  g.attention_dropout = static_cast<float>(cfg_prob(c, "attn_pdrop"));
  ZT_REQUIRE(g.hidden % g.heads == 0, "import: '{}': n_head must divide n_embd", where);
  ZT_REQUIRE(!c.contains("n_inner") || c["n_inner"].is_null() ||
                 c["n_inner"] == nlohmann::json(4 * g.hidden),
             "import: '{}': zerotron's MLP is 4 x n_embd wide, n_inner is {}", where,
             c["n_inner"].dump());
  ZT_REQUIRE(c.value("activation_function", std::string("gelu_new")) == "gelu_new",
             "import: '{}': zerotron computes GeLU with the tanh approximation (gelu_new), the "
             "model uses '{}'",
             where, c.value("activation_function", std::string()));
  ZT_REQUIRE(std::abs(c.value("layer_norm_epsilon", 1e-5) - 1e-5) < 1e-12,
             "import: '{}': zerotron's layernorm epsilon is 1e-5", where);
  ZT_REQUIRE(c.value("tie_word_embeddings", true),
             "import: '{}': zerotron ties the output head to the word embedding", where);
  return g;
}

}  // namespace

int import_model(Args args) {
  const std::vector<FlagSpec> specs = {
      {"--input", "FILE", "Hugging Face GPT-2 safetensors file (config.json beside it)", true},
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
  GptConfig model = read_config(input.parent_path() / "config.json");
  model.padded_vocab_size = padded_vocab_size(model.vocab_size, divisible, lay.tp);
  validate_tensor_parallel(model, lay.tp);

  const Mapped file(input.string());
  uint64_t header_len = 0;
  std::memcpy(&header_len, file.data(), 8);
  ZT_REQUIRE(header_len <= file.size() - 8 && header_len <= (uint64_t{100} << 20),
             "import: '{}' is not a safetensors file (header length {})", input.string(),
             header_len);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(file.data() + 8, file.data() + 8 + header_len);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("import: '{}' has no valid header: {}", input.string(), e.what()));
  }
  ZT_REQUIRE(header.is_object(), "import: '{}' has no valid header", input.string());
  const char* body = file.data() + 8 + header_len;
  const uint64_t body_len = file.size() - 8 - header_len;

  // Every tensor zerotron needs, checked (dtype, shape, bounds) before anything is written.
  const ParamLayout full = ParamLayout::gpt(model, 1, 0);
  std::map<std::string, Source> sources;
  for (const HfTensor& m : gpt2_tensors(model.num_layers)) {
    ZT_REQUIRE(header.contains(m.theirs) && header[m.theirs].is_object(),
               "import: '{}' has no tensor '{}'", input.string(), m.theirs);
    const auto& e = header[m.theirs];
    const std::string dt = e.value("dtype", "");
    ZT_REQUIRE(dt == "F32" || dt == "BF16" || dt == "F16",
               "import: '{}': tensor '{}' has dtype '{}', expected F32, BF16 or F16",
               input.string(), m.theirs, dt);
    const ParamSpec& p = full.find(m.ours);
    const int64_t rows = m.ours == "embedding.word" ? model.vocab_size : p.full_shape[0];
    const int64_t cols = p.full_shape.rank() == 2 ? p.full_shape[1] : 1;
    nlohmann::json want = p.full_shape.rank() == 1 ? nlohmann::json{rows}
                          : m.transpose            ? nlohmann::json{cols, rows}
                                                   : nlohmann::json{rows, cols};
    ZT_REQUIRE(e.contains("shape") && e["shape"] == want,
               "import: '{}': tensor '{}' has shape {}, config.json makes it {}", input.string(),
               m.theirs, e.value("shape", nlohmann::json()).dump(), want.dump());
    const size_t elem = dt == "F32" ? 4 : 2;
    const auto& off = e.value("data_offsets", nlohmann::json());
    ZT_REQUIRE(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() &&
                   off[1].is_number_unsigned() && off[0].get<uint64_t>() <= body_len &&
                   off[1].get<uint64_t>() <= body_len &&
                   off[1].get<uint64_t>() - off[0].get<uint64_t>() ==
                       static_cast<uint64_t>(rows * cols) * elem,
               "import: '{}': tensor '{}' has bad data_offsets", input.string(), m.theirs);
    sources[m.ours] = {body + off[0].get<uint64_t>(),
                       dt == "F32"    ? DType::F32
                       : dt == "BF16" ? DType::BF16
                                      : DType::F16,
                       m.transpose, rows, cols};
  }
  const std::string save = flags->str("--save");
  write_checkpoint(save, model, lay, [&](const ParamSpec& p, int64_t f, int64_t n, float* dst) {
    const Source& s = sources.at(p.name);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = f + i;
      dst[i] = element(s, s.transpose ? (at % s.cols) * s.rows + at / s.cols : at);
    }
  });
  fmt::print(
      "zerotron: imported {} ({} parameters, {} layers, hidden {}) into {} at iteration 0 as tp {} "
      "x dp {}, ZeRO stage {}\n",
      input.string(), model.num_parameters(), model.num_layers, model.hidden, save, lay.tp, lay.dp,
      lay.stage);
  return 0;
}

}  // namespace zt::app
