// zerotron export --load DIR [--ckpt-step N] --output model.safetensors [--bf16|--fp16]: one
// saved iteration (default: `latest`'s), consolidated (every pipeline, tensor-parallel and ZeRO
// shard found through the saved layout) into one safetensors file with Hugging Face GPT-2,
// Llama, Mixtral or Qwen2-MoE names and layout (by the model's architecture), plus a config.json
// beside it, so transformers' GPT2LMHeadModel, LlamaForCausalLM, MixtralForCausalLM or
// Qwen2MoeForCausalLM .from_pretrained(<that directory>) loads it, and the tokenizer's files
// (vocab.json, merges.txt, tokenizer_config.json, special_tokens_map.json) when the run's are
// known, so AutoTokenizer and pipeline() load the directory too. One process, no MPI.
// Streaming: tensor by tensor, each in chunks of at most kChunkElems, so host memory is bounded
// whatever the model size.
#include <fmt/format.h>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "apps/commands.h"
#include "src/checkpoint/checkpoint.h"
#include "src/checkpoint/file.h"
#include "src/checkpoint/hf_llama.h"
#include "src/checkpoint/reader.h"
#include "src/config/command_flags.h"
#include "src/core/error.h"
#include "src/core/half.h"
#include "src/core/progress.h"
#include "src/data/bpe_tokenizer.h"

namespace zt::app {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kChunkElems = int64_t{16} << 20;  // 64 MiB of fp32

struct Out {
  const HfTensor* map;
  const SavedTensor* saved;
  int64_t row_begin, rows, cols;  // the rows of zerotron's tensor written (cols 1: a vector)
};

// Writes `n` floats in the output dtype.
void emit(Fd& f, const float* v, int64_t n, DType dt, std::vector<char>& scratch,
          Progress& progress) {
  progress.add(static_cast<uint64_t>(n) * (dt == DType::F32 ? 4 : 2));
  if (dt == DType::F32) {
    f.write(v, static_cast<size_t>(n) * 4);
    return;
  }
  scratch.resize(static_cast<size_t>(n) * 2);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = dt == DType::BF16 ? to_bf16(v[i]).bits : to_fp16(v[i]).bits;
    std::memcpy(scratch.data() + 2 * i, &b, 2);
  }
  f.write(scratch.data(), scratch.size());
}

void stream_tensor(SavedCheckpoint& saved, const Out& o, Fd& f, DType dt, Progress& progress) {
  std::vector<float> buf, row;
  std::vector<char> scratch;
  if (!o.map->transpose) {  // the same row-major order: copy in chunks
    const int64_t n = o.rows * o.cols, first = o.row_begin * o.cols;
    for (int64_t at = 0; at < n; at += kChunkElems) {
      const int64_t m = std::min(kChunkElems, n - at);
      buf.resize(static_cast<size_t>(m));
      saved.read_full(*o.saved, 0, first + at, m, buf.data());
      emit(f, buf.data(), m, dt, scratch, progress);
    }
    return;
  }
  // [rows, cols] -> [cols, rows]: output rows (our columns) [c0, c1) at a time, each gathered
  // from a slice of every one of our rows.
  const int64_t span = std::max<int64_t>(1, kChunkElems / o.rows);
  for (int64_t c0 = 0; c0 < o.cols; c0 += span) {
    const int64_t c1 = std::min(o.cols, c0 + span), w = c1 - c0;
    buf.resize(static_cast<size_t>(w * o.rows));
    row.resize(static_cast<size_t>(w));
    for (int64_t r = 0; r < o.rows; ++r) {
      saved.read_full(*o.saved, 0, r * o.cols + c0, w, row.data());
      for (int64_t j = 0; j < w; ++j) buf[static_cast<size_t>(j * o.rows + r)] = row[j];
    }
    emit(f, buf.data(), w * o.rows, dt, scratch, progress);
  }
}

// The tokenizer files of the export: --vocab-file/--merge-file, else those the checkpoint's run
// recorded in its settings. Both or none.
std::optional<std::pair<std::string, std::string>> tokenizer_files(const ParsedFlags& f,
                                                                   const nlohmann::json& meta) {
  ZT_REQUIRE(f.has("--vocab-file") == f.has("--merge-file"),
             "export: --vocab-file and --merge-file go together");
  if (f.has("--vocab-file")) return std::pair{f.str("--vocab-file"), f.str("--merge-file")};
  const auto settings = meta.find("settings");
  if (settings == meta.end() || !settings->is_object()) return std::nullopt;
  const auto v = settings->find("vocab-file"), m = settings->find("merge-file");
  if (v == settings->end() || m == settings->end() || !v->is_string() || !m->is_string())
    return std::nullopt;
  return std::pair{v->get<std::string>(), m->get<std::string>()};
}

// The tokenizer of `files`, checked against the model before anything is written.
data::BpeTokenizer checked_tokenizer(const std::pair<std::string, std::string>& files,
                                     const GptConfig& c) {
  auto tok = data::BpeTokenizer::from_files(files.first, files.second);
  ZT_REQUIRE(tok.vocab_size() == c.vocab_size,
             "export: the tokenizer '{}' has {} tokens but the model's vocabulary is {}",
             files.first, tok.vocab_size(), c.vocab_size);
  ZT_REQUIRE(tok.eod().has_value(), "export: the tokenizer '{}' has no <|endoftext|> token",
             files.first);
  return tok;
}

// vocab.json and merges.txt copied beside the model, with the files that tell transformers'
// AutoTokenizer they are GPT-2's byte-level BPE and which token ends a document.
void write_tokenizer(const std::pair<std::string, std::string>& files,
                     const data::BpeTokenizer& tok, const GptConfig& c, const fs::path& out_dir) {
  const int32_t eod = *tok.eod();
  const std::string eos = tok.decode(std::span<const int32_t>(&eod, 1));
  std::error_code ec;
  for (const auto& [from, to] :
       {std::pair{files.first, "vocab.json"}, {files.second, "merges.txt"}}) {
    fs::copy_file(from, out_dir / to, fs::copy_options::overwrite_existing, ec);
    ZT_REQUIRE(!ec, "export: cannot copy '{}' to '{}' ({})", from, (out_dir / to).string(),
               ec.message());
  }
  const nlohmann::json special = {{"bos_token", eos}, {"eos_token", eos}, {"unk_token", eos}};
  nlohmann::json config = special;
  config["tokenizer_class"] = "GPT2Tokenizer";
  config["model_max_length"] = c.seq_length;
  config["add_prefix_space"] = false;
  write_file_atomically(out_dir, "tokenizer_config.json", config.dump(2) + "\n");
  write_file_atomically(out_dir, "special_tokens_map.json", special.dump(2) + "\n");
}

// config.json's bos_token_id and eos_token_id: the tokenizer's end-of-document token where the
// tokenizer is known (zerotron's documents begin and end with it, as GPT-2's do), else what an
// import recorded from the Hugging Face config, else none (GPT-2's config keeps its default).
nlohmann::json token_ids(const std::optional<data::BpeTokenizer>& tok, const nlohmann::json& meta,
                         const GptConfig& c, const std::string& where) {
  if (tok) return {{"bos_token_id", *tok->eod()}, {"eos_token_id", *tok->eod()}};
  const auto it = meta.find("token_ids");
  if (it == meta.end()) return nlohmann::json::object();
  ZT_REQUIRE(it->is_object(), "{}: 'token_ids' must be an object", where);
  return hf_token_ids(nlohmann::json{{"bos_token_id", it->value("bos_token_id", nlohmann::json())},
                                     {"eos_token_id", it->value("eos_token_id", nlohmann::json())}}
                          .dump(),
                      c.vocab_size, where);
}

}  // namespace

int export_model(Args args) {
  const std::vector<FlagSpec> specs = {
      {"--load", "DIR", "checkpoint directory", true},
      {"--ckpt-step", "N", "the saved iteration to export (default: the one `latest` names)"},
      {"--iteration", "N", "the same as --ckpt-step"},
      {"--output", "FILE",
       "safetensors file to write (its directory is created); config.json "
       "goes beside it",
       true},
      {"--bf16", "", "write bf16 instead of fp32"},
      {"--fp16", "", "write fp16 instead of fp32"},
      {"--vocab-file", "V",
       "GPT-2 vocab.json to write beside the model (default: the one the checkpoint's run "
       "recorded, if any)"},
      {"--merge-file", "M", "GPT-2 merges.txt to go with --vocab-file"},
  };
  auto flags = ParsedFlags::parse("export", specs, args);
  if (!flags) return 0;
  ZT_REQUIRE(!(flags->has("--bf16") && flags->has("--fp16")),
             "export: --bf16 and --fp16 are "
             "exclusive");
  const DType dt = flags->has("--bf16")   ? DType::BF16
                   : flags->has("--fp16") ? DType::F16
                                          : DType::F32;
  const std::optional<int64_t> iteration = checkpoint_step_flag(*flags);
  nlohmann::json meta;
  const std::string iter_dir = checkpoint_iteration_dir(flags->str("--load"), iteration, meta);
  SavedCheckpoint saved(iter_dir, meta);
  const GptConfig& c = saved.model();
  const std::vector<HfTensor> names = hf_tensors(c, fmt::format("export: '{}'", iter_dir));
  const auto tokenizer = tokenizer_files(*flags, meta);
  std::optional<data::BpeTokenizer> tok;
  if (tokenizer) tok = checked_tokenizer(*tokenizer, c);
  const size_t elem = dt == DType::F32 ? 4 : 2;
  const char* hf_dtype = dt == DType::F32 ? "F32" : dt == DType::BF16 ? "BF16" : "F16";

  std::vector<Out> outs;
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"},
                            {"source", "zerotron " + iter_dir},
                            {"iteration", std::to_string(meta.at("iteration").get<int64_t>())}};
  uint64_t offset = 0;
  for (const HfTensor& m : names) {
    const SavedTensor* t = saved.find(m.ours);
    ZT_REQUIRE(t != nullptr, "export: checkpoint '{}' has no tensor '{}'", iter_dir, m.ours);
    const Shape& s = t->spec->full_shape;
    // Drop the vocabulary padding: Hugging Face's embedding and head have vocab_size rows.
    const int64_t rows = m.rows >= 0 ? m.rows : m.ours == "embedding.word" ? c.vocab_size : s[0];
    const int64_t cols = s.rank() == 2 ? s[1] : 1;
    std::vector<int64_t> shape;
    if (s.rank() == 1)
      shape = {rows};
    else if (m.transpose)
      shape = {cols, rows};
    else
      shape = {rows, cols};
    const uint64_t bytes = static_cast<uint64_t>(rows * cols) * elem;
    header[m.theirs] = {
        {"dtype", hf_dtype}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    outs.push_back({&m, t, m.row_begin, rows, cols});
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned

  const fs::path output = flags->str("--output");
  const fs::path out_dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  ZT_REQUIRE(!ec, "export: cannot create the directory of --output '{}' ({})", output.string(),
             ec.message());
  // Written beside and renamed into place: a failed export leaves no half file under the name.
  const fs::path tmp = output.string() + ".tmp";
  {
    Fd f = Fd::create(tmp.string());
    const uint64_t n = text.size();
    f.write(&n, 8);
    f.write(text.data(), text.size());
    Progress progress(fmt::format("exporting iteration {} of {} to {}",
                                  meta.at("iteration").get<int64_t>(), iter_dir, output.string()),
                      offset);
    for (const Out& o : outs) stream_tensor(saved, o, f, dt, progress);
    f.sync();
  }
  fs::rename(tmp, output);
  const char* torch_dtype = dt == DType::F32    ? "float32"
                            : dt == DType::BF16 ? "bfloat16"
                                                : "float16";
  const nlohmann::json ids =
      token_ids(tok, meta, c, fmt::format("export: '{}/meta.json'", iter_dir));
  write_file_atomically(out_dir, "config.json", hf_config(c, torch_dtype, ids).dump(2) + "\n");
  if (tokenizer) write_tokenizer(*tokenizer, *tok, c, out_dir);
  fmt::print("zerotron: exported {} tensors ({} bytes, {}) of iteration {} to {} and {}\n",
             outs.size(), offset, torch_dtype, meta.at("iteration").get<int64_t>(), output.string(),
             (out_dir / "config.json").string());
  if (tokenizer)
    fmt::print("zerotron: tokenizer {} and {} written beside it\n", tokenizer->first,
               tokenizer->second);
  else
    fmt::print(
        "zerotron: no tokenizer written (the run recorded none): pass --vocab-file and "
        "--merge-file for AutoTokenizer to load the directory\n");
  return 0;
}

}  // namespace zt::app
