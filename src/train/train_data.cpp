#include "src/train/train_data.h"

#include <filesystem>
#include <vector>

#include "src/core/error.h"
#include "src/core/log.h"
#include "src/data/blended_dataset.h"
#include "src/data/bpe_tokenizer.h"
#include "src/data/mock_data.h"

namespace zt {
namespace {

// The opened datasets and their GPT views; the sources share it, so it lives as long as either.
struct Corpus {
  std::vector<std::unique_ptr<data::IndexedDataset>> datasets;
  std::vector<std::unique_ptr<data::GptDataset>> splits[3];  // train, valid, test; per dataset
  std::unique_ptr<data::BlendedDataset> blend[3];
};

class GptSource final : public BatchSource {
 public:
  GptSource(std::shared_ptr<const Corpus> corpus, int split)
      : corpus_(std::move(corpus)),
        blend_(*corpus_->blend[split]),
        sample_(static_cast<size_t>(blend_.seq_length() + 1)) {}
  void sample(int64_t index, int32_t* tokens, int32_t* targets) const override {
    blend_.read(index, sample_);
    std::copy(sample_.begin(), sample_.end() - 1, tokens);
    std::copy(sample_.begin() + 1, sample_.end(), targets);
  }

 private:
  std::shared_ptr<const Corpus> corpus_;
  const data::BlendedDataset& blend_;
  mutable std::vector<int32_t> sample_;  // seq_length + 1 tokens
};

void require_file(const char* flag, const std::string& path) {
  ZT_REQUIRE(!path.empty(), "--data-path needs {}", flag);
  std::error_code ec;
  ZT_REQUIRE(std::filesystem::is_regular_file(path, ec), "{} '{}': no such file", flag, path);
}

// Distinct shuffles for each dataset and split (equal-sized blended datasets would otherwise be
// permuted identically); dataset 0's training split keeps --seed itself.
uint64_t split_seed(int64_t seed, size_t dataset, int split) {
  return static_cast<uint64_t>(seed) + 0x9E3779B97F4A7C15ULL * (3 * dataset + split);
}

}  // namespace

TrainData open_train_data(TrainOptions& o) {
  TrainData d;
  if (o.data_path.empty()) {
    d.train = std::make_shared<MockData>(static_cast<uint64_t>(o.seed), o.seq_length, o.vocab_size);
    return d;
  }
  const data::DataBlend blend = data::parse_data_path(o.data_path);
  const bool hf = o.tokenizer_type == "HuggingFaceTokenizer";
  if (!hf) {
    require_file("--vocab-file", o.vocab_file);
    require_file("--merge-file", o.merge_file);
  }
  const int vocab =
      data::load_tokenizer(o.tokenizer_type, o.vocab_file, o.merge_file, o.tokenizer_model)
          .vocab_size();
  ZT_REQUIRE(o.vocab_size == 0 || o.vocab_size == vocab,
             "--vocab-size {} disagrees with {} '{}', which has {} tokens (leave --vocab-size out "
             "with --data-path)",
             o.vocab_size, hf ? "--tokenizer-model" : "--vocab-file",
             hf ? o.tokenizer_model : o.vocab_file, vocab);
  o.vocab_size = vocab;

  auto corpus = std::make_shared<Corpus>();
  const bool eval = o.eval_iters > 0;
  const char* split_name[3] = {"training", "validation", "test"};
  bool test = eval;  // every dataset has test documents that make a sample
  for (size_t k = 0; k < blend.prefixes.size(); ++k) {
    const std::string& p = blend.prefixes[k];
    require_file("--data-path", p + ".idx");
    require_file("--data-path", p + ".bin");
    // Every token is checked against the vocabulary here, once, instead of trusting the file.
    auto& ds = corpus->datasets.emplace_back(
        std::make_unique<data::IndexedDataset>(data::IndexedDataset::open(p, vocab)));
    const auto ranges = data::split_documents(o.split, ds->num_documents());
    for (int s = 0; s < (eval ? 2 : 1); ++s) {
      try {
        corpus->splits[s].push_back(std::make_unique<data::GptDataset>(
            *ds, ranges[static_cast<size_t>(s)], o.seq_length, split_seed(o.seed, k, s)));
      } catch (const InputError& e) {
        throw InputError(fmt::format("--data-path {}: {} split of --split {}: {}{}", p,
                                     split_name[s], o.split, e.what(),
                                     s == 1 ? " (or pass --eval-iters 0)" : ""));
      }
    }
    if (!test) continue;
    const auto docs = ranges[2];
    try {
      test = docs.second > docs.first;
      if (test)
        corpus->splits[2].push_back(
            std::make_unique<data::GptDataset>(*ds, docs, o.seq_length, split_seed(o.seed, k, 2)));
    } catch (const InputError& e) {
      log::info("zerotron: no test evaluation: --data-path {}: test split of --split {}: {}", p,
                o.split, e.what());
      test = false;
    }
  }
  for (int s = 0; s < (eval ? 2 : 1); ++s) {
    std::vector<const data::GptDataset*> parts;
    for (const auto& g : corpus->splits[s]) parts.push_back(g.get());
    corpus->blend[s] = std::make_unique<data::BlendedDataset>(parts, blend.weights);
  }
  if (test) {
    std::vector<const data::GptDataset*> parts;
    for (const auto& g : corpus->splits[2]) parts.push_back(g.get());
    corpus->blend[2] = std::make_unique<data::BlendedDataset>(parts, blend.weights);
  }
  d.train = std::make_shared<GptSource>(corpus, 0);
  if (eval) d.valid = std::make_shared<GptSource>(corpus, 1);
  if (test) d.test = std::make_shared<GptSource>(corpus, 2);
  return d;
}

}  // namespace zt
