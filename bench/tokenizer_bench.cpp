// Tokenizer throughput: byte-level BPE encoding MB/s on 1 and 2 threads, and the pre-tokenizers'
// split rules alone (GPT-2, Llama 3, Qwen2; 1 thread, median of 7), printed as JSON.
//   bench_tokenizer [--input FILE] [--vocab-file V --merge-file M | --tokenizer-model J]
//                   [--vocab-size N]
// --tokenizer-model encodes with a Hugging Face tokenizer.json instead.
// Without --input it reads the King James Bible from `bible -f -l 'Gen1:1-Rev22:21'` (Debian
// package bible-kjv, 4.4 MB); without vocab files it first trains an N-id BPE (default 8192) on
// the input. The text is cut into ~4 KB documents at line ends, since prepare-data parallelises
// across documents. Each run starts with empty word caches, as a fresh prepare-data would.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "src/data/bpe_tokenizer.h"
#include "src/data/bpe_trainer.h"
#include "src/data/file_util.h"
#include "src/data/parallel_encode.h"
#include "src/data/pretokenize.h"

namespace {

std::string read_command(const char* cmd) {
  struct Closer {
    void operator()(std::FILE* f) const { ::pclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> p(::popen(cmd, "r"));
  std::string out;
  if (!p) return out;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p.get())) > 0;) out.append(buf, n);
  return out;
}

std::vector<std::string> split_documents(const std::string& text, size_t target) {
  std::vector<std::string> docs;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', std::min(pos + target, text.size()));
    end = end == std::string::npos ? text.size() : end + 1;
    docs.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return docs;
}

}  // namespace

static int run(int argc, char** argv) {
  std::string input, vocab, merges, model;
  int vocab_size = 8192;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--input")
      input = argv[i + 1];
    else if (a == "--vocab-file")
      vocab = argv[i + 1];
    else if (a == "--merge-file")
      merges = argv[i + 1];
    else if (a == "--tokenizer-model")
      model = argv[i + 1];
    else if (a == "--vocab-size")
      vocab_size = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_tokenizer: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  const std::string text =
      input.empty() ? read_command("bible -f -l 'Gen1:1-Rev22:21'") : zt::data::read_file(input);
  if (text.empty()) {
    std::fprintf(stderr, "bench_tokenizer: no input (install bible-kjv or pass --input)\n");
    return 2;
  }
  std::string vocab_json, merges_txt;
  if (!model.empty()) {
  } else if (vocab.empty()) {
    zt::data::BpeTrainer trainer;
    trainer.add_text(text);
    const auto model = trainer.train(vocab_size);
    vocab_json = zt::data::vocab_json(model);
    merges_txt = zt::data::merges_txt(model);
  } else {
    vocab_json = zt::data::read_file(vocab);
    merges_txt = zt::data::read_file(merges);
  }
  const auto tok = model.empty() ? zt::data::BpeTokenizer::from_strings(vocab_json, merges_txt)
                                 : zt::data::BpeTokenizer::from_hf_file(model);
  const auto docs = split_documents(text, 4096);

  // The rules take turns, rotating which goes first, so that a noisy neighbour or a warming
  // cache falls on all of them alike; each reports its median of 7.
  using zt::data::SplitRule;
  const std::pair<const char*, SplitRule> kRules[] = {
      {"gpt2", SplitRule::kGpt2}, {"llama3", SplitRule::kLlama3}, {"qwen2", SplitRule::kQwen2}};
  constexpr int kRuleCount = 3, kReps = 7;
  std::vector<double> times[kRuleCount];
  size_t pieces[kRuleCount] = {};
  for (int rep = 0; rep < kReps; ++rep)
    for (int k = 0; k < kRuleCount; ++k) {
      const int r = (rep + k) % kRuleCount;
      size_t n = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& d : docs) {
        zt::data::Pretokenizer p(d, kRules[r].second);
        std::string_view piece;
        while (p.next(piece)) ++n;
      }
      times[r].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      pieces[r] = n;
    }
  std::string rules;
  for (int r = 0; r < kRuleCount; ++r) {
    std::sort(times[r].begin(), times[r].end());
    const double median = times[r][kReps / 2];
    rules += fmt::format(
        "{}{{\"rule\": \"{}\", \"pieces\": {}, \"median_seconds\": {:.4f}, "
        "\"mb_per_s\": {:.1f}}}",
        rules.empty() ? "" : ", ", kRules[r].first, pieces[r], median,
        static_cast<double>(text.size()) / 1e6 / median);
  }

  std::string runs;
  size_t tokens = 0;
  for (int threads : {1, 2}) {
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      zt::data::ParallelEncoder enc(tok, threads, /*append_eod=*/true);
      std::vector<std::vector<int32_t>> ids;
      const auto t0 = std::chrono::steady_clock::now();
      enc.encode(docs, ids);
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      tokens = 0;
      for (const auto& d : ids) tokens += d.size();
    }
    runs += fmt::format(
        "{}{{\"threads\": {}, \"seconds\": {:.4f}, \"mb_per_s\": {:.2f}, "
        "\"tokens_per_s\": {:.0f}}}",
        runs.empty() ? "" : ", ", threads, best, static_cast<double>(text.size()) / 1e6 / best,
        static_cast<double>(tokens) / best);
  }
  fmt::print(
      "{{\"bench\": \"tokenizer\", \"input\": \"{}\", \"bytes\": {}, \"documents\": {}, "
      "\"tokenizer\": \"{}\", \"vocab_size\": {}, \"tokens\": {}, \"runs\": [{}], "
      "\"pretokenize\": [{}]}}\n",
      input.empty() ? "bible-kjv Gen1:1-Rev22:21" : input, text.size(), docs.size(),
      model.empty() ? "vocab.json+merges.txt" : model, tok.vocab_size(), tokens, runs, rules);
  return 0;
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
