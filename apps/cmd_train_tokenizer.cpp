// zerotron train-tokenizer: learns a GPT-2 byte-level BPE from a text corpus and writes
// DIR/vocab.json and DIR/merges.txt, which prepare-data and train load with --vocab-file and
// --merge-file. The whole input is pre-tokenized (JSON lines: the --json-keys fields).
#include <chrono>

#include "apps/commands.h"
#include "src/config/command_flags.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/data/bpe_trainer.h"
#include "src/data/document_reader.h"

namespace zt::app {

int train_tokenizer(Args args) {
  const std::vector<FlagSpec> specs = {
      {"--input", "FILE", "corpus: plain text, or JSON lines if .json/.jsonl", true},
      {"--vocab-size", "N", "total ids: 256 bytes + merges + <|endoftext|>", true},
      {"--output-dir", "DIR", "where vocab.json and merges.txt are written", true},
      {"--input-format", "text|jsonl", "override the format guessed from the extension"},
      {"--json-keys", "KEY", "JSON field holding the text (default: text)"},
      {"--min-frequency", "N", "stop when no pair occurs this often (default: 2)"},
  };
  auto flags = ParsedFlags::parse("train-tokenizer", specs, args);
  if (!flags) return 0;
  const auto vocab_size = flags->integer("--vocab-size", 0, 257, 1 << 30);
  const auto min_freq = flags->integer("--min-frequency", 2, 1, int64_t{1} << 62);
  const std::string input = flags->str("--input");
  auto format = data::format_from_extension(input);
  if (flags->has("--input-format")) {
    const std::string f = flags->str("--input-format");
    ZT_REQUIRE(f == "text" || f == "jsonl",
               "train-tokenizer: --input-format must be text or "
               "jsonl, got '{}'",
               f);
    format = f == "text" ? data::InputFormat::kText : data::InputFormat::kJsonLines;
  }

  const auto t0 = std::chrono::steady_clock::now();
  data::DocumentReader reader(input, format, {flags->str("--json-keys", "text")});
  data::BpeTrainer trainer;
  std::vector<std::string> fields;
  size_t docs = 0;
  while (reader.next(fields)) {
    trainer.add_text(fields[0]);
    ++docs;
  }
  const auto model = trainer.train(static_cast<int32_t>(vocab_size), min_freq);
  const std::string dir = flags->str("--output-dir");
  data::write_bpe_files(model, dir);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log::info(
      "train-tokenizer: {} documents, {} distinct words, {} merges, vocab {} -> {}/vocab.json, "
      "{}/merges.txt ({:.1f} s)",
      docs, trainer.distinct_words(), model.merges.size(), model.tokens.size(), dir, dir, s);
  if (static_cast<int64_t>(model.tokens.size()) < vocab_size)
    log::info("train-tokenizer: note: stopped at vocab {} < {}: no pair occurs {} times",
              model.tokens.size(), vocab_size, min_freq);
  return 0;
}

}  // namespace zt::app
