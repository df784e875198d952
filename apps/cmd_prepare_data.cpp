// zerotron prepare-data: tokenizes a corpus into Megatron's MMapIndexedDataset, one output pair
// <prefix>_<key>_document.{bin,idx} per JSON key ("text" for plain text), the same names and
// bytes as Megatron-LM's tools/preprocess_data.py (one sequence per document; a document whose
// text is empty becomes an empty document, and gets no eod, as there).
// Tokenizers: GPT2BPETokenizer (vocab.json + merges.txt) or HuggingFaceTokenizer (a byte-level
// BPE tokenizer.json; its template tokens, e.g. Llama 3's <|begin_of_text|>, start every
// document, as Megatron's preprocessing stores them, and --append-eod then adds the eos token:
// with such a template an empty text is the document <|begin_of_text|> <|end_of_text|>, as there).
#include <chrono>
#include <filesystem>
#include <thread>

#include "apps/commands.h"
#include "src/config/command_flags.h"
#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/core/log.h"
#include "src/data/bpe_tokenizer.h"
#include "src/data/document_reader.h"
#include "src/data/indexed_dataset_builder.h"
#include "src/data/parallel_encode.h"

namespace zt::app {
namespace {

using Clock = std::chrono::steady_clock;

// Batches bound memory and give the workers enough documents to balance.
constexpr size_t kBatchBytes = 8 << 20;
constexpr size_t kBatchDocs = 16384;

}  // namespace

int prepare_data(Args args) {
  const std::vector<FlagSpec> specs = {
      {"--input", "FILE", "plain text (blank-line-separated documents) or JSON lines", true},
      {"--output-prefix", "P", "writes P_<key>_document.bin/.idx", true},
      {"--tokenizer-type", "T", "GPT2BPETokenizer or HuggingFaceTokenizer", true},
      {"--vocab-file", "V", "GPT-2 vocab.json (GPT2BPETokenizer)"},
      {"--merge-file", "M", "GPT-2 merges.txt (GPT2BPETokenizer)"},
      {"--tokenizer-model", "PATH",
       "byte-level BPE tokenizer.json, or the directory holding it (HuggingFaceTokenizer)"},
      {"--append-eod", "", "append the end-of-document token to every non-empty document"},
      {"--json-keys", "KEY...", "JSON fields to tokenize (default: text)", false, true},
      {"--input-format", "text|jsonl", "override the format guessed from the extension"},
      {"--workers", "N", "encoding threads (default: all cores)"},
  };
  auto flags = ParsedFlags::parse("prepare-data", specs, args);
  if (!flags) return 0;
  const std::string type = flags->str("--tokenizer-type");
  const bool hf = type == "HuggingFaceTokenizer";
  ZT_REQUIRE(hf || type == "GPT2BPETokenizer",
             "prepare-data: --tokenizer-type {} is not supported (GPT2BPETokenizer or "
             "HuggingFaceTokenizer)",
             excerpt(type));
  std::string model_path;
  if (hf) {
    ZT_REQUIRE(flags->has("--tokenizer-model") && !flags->has("--vocab-file") &&
                   !flags->has("--merge-file"),
               "prepare-data: --tokenizer-type HuggingFaceTokenizer takes --tokenizer-model "
               "(a tokenizer.json), not --vocab-file/--merge-file");
    model_path = flags->str("--tokenizer-model");
  } else {
    ZT_REQUIRE(flags->has("--vocab-file") && flags->has("--merge-file") &&
                   !flags->has("--tokenizer-model"),
               "prepare-data: --tokenizer-type GPT2BPETokenizer takes --vocab-file and "
               "--merge-file, not --tokenizer-model");
  }
  const int workers = static_cast<int>(
      flags->integer("--workers", std::max(1u, std::thread::hardware_concurrency()), 1, 1024));
  const std::string input = flags->str("--input");
  auto format = data::format_from_extension(input);
  if (flags->has("--input-format")) {
    const std::string f = flags->str("--input-format");
    ZT_REQUIRE(f == "text" || f == "jsonl",
               "prepare-data: --input-format must be text or jsonl, got '{}'", f);
    format = f == "text" ? data::InputFormat::kText : data::InputFormat::kJsonLines;
  }
  auto keys = flags->list("--json-keys", {"text"});
  if (format == data::InputFormat::kText) keys = {"text"};

  const auto tok =
      hf ? data::BpeTokenizer::from_hf_file(model_path)
         : data::BpeTokenizer::from_files(flags->str("--vocab-file"), flags->str("--merge-file"));
  data::DocumentReader reader(input, format, keys);
  data::ParallelEncoder encoder(tok, workers, flags->has("--append-eod"));
  const auto dtype = data::optimal_dtype(tok.vocab_size());
  const std::string prefix = flags->str("--output-prefix");
  std::vector<data::IndexedDatasetBuilder> builders;
  for (const auto& k : keys) builders.emplace_back(prefix + "_" + k + "_document", dtype);

  const auto t0 = Clock::now();
  auto last_report = t0;
  size_t docs = 0, tokens = 0;
  std::vector<std::string> fields;
  std::vector<std::vector<std::string>> batch(keys.size());  // batch[key][doc]
  std::vector<std::vector<int32_t>> ids;
  auto report = [&](std::string_view what) {
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    const double mb = static_cast<double>(reader.bytes_read()) / 1e6;
    log::info(
        "prepare-data: {} {} documents, {} tokens, {:.1f} of {:.1f} MB, {:.0f} docs/s, "
        "{:.2f} MB/s",
        what, docs, tokens, mb, static_cast<double>(reader.bytes_total()) / 1e6,
        static_cast<double>(docs) / std::max(s, 1e-9), mb / std::max(s, 1e-9));
  };
  bool more = true;
  while (more) {
    size_t bytes = 0;
    for (auto& b : batch) b.clear();
    while (bytes < kBatchBytes && batch[0].size() < kBatchDocs && (more = reader.next(fields)))
      for (size_t k = 0; k < keys.size(); ++k) {
        bytes += fields[k].size();
        batch[k].push_back(std::move(fields[k]));
      }
    for (size_t k = 0; k < keys.size(); ++k) {
      encoder.encode(batch[k], ids);
      for (const auto& d : ids) {
        if (d.empty())
          builders[k].end_document();
        else
          builders[k].add_document(d);
        tokens += d.size();
      }
    }
    docs += batch[0].size();
    if (Clock::now() - last_report > std::chrono::seconds(2)) {
      report("processed");
      last_report = Clock::now();
    }
  }
  // Megatron writes an empty dataset here; training on it fails much later, far from the cause.
  ZT_REQUIRE(tokens > 0,
             "prepare-data: --input '{}' has no text to tokenize ({} documents, all empty or "
             "whitespace); nothing written",
             excerpt(input, 200), docs);
  for (auto& b : builders) b.finalize();
  report("done:");
  for (const auto& k : keys)
    log::info("prepare-data: wrote {0}_{1}_document.bin and {0}_{1}_document.idx ({2}, vocab {3})",
              prefix, k, data::dtype_name(dtype), tok.vocab_size());
  // The line to train on it, as `train` takes it: the prefix without .bin/.idx, and the
  // tokenizer the ids belong to.
  if (hf)
    log::info("prepare-data: the ids are for a vocabulary of {} tokens (tokenizer.json '{}')",
              tok.vocab_size(), model_path);
  else
    log::info("prepare-data: train with --data-path {}_{}_document --vocab-file {} --merge-file {}",
              prefix, keys.front(), flags->str("--vocab-file"), flags->str("--merge-file"));
  return 0;
}

}  // namespace zt::app
