#include "src/data/gpt_dataset.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "src/core/error.h"
#include "src/core/input_file.h"

namespace zt::data {
namespace {

// SplitMix64: a fixed, portable generator (std::shuffle and the std distributions are not
// specified bit-for-bit across standard libraries).
uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<std::pair<size_t, size_t>> split_documents(const std::string& weights, size_t n) {
  std::vector<double> w;
  for (size_t pos = 0; pos <= weights.size();) {
    size_t end = weights.find_first_of(",/", pos);
    if (end == std::string::npos) end = weights.size();
    double v = 0;
    auto [p, ec] = std::from_chars(weights.data() + pos, weights.data() + end, v);
    ZT_REQUIRE(ec == std::errc{} && p == weights.data() + end && v >= 0 && std::isfinite(v),
               "--split '{}': expected up to three non-negative numbers like 949,50,1",
               excerpt(weights));
    w.push_back(v);
    pos = end + 1;
  }
  ZT_REQUIRE(w.size() <= 3, "--split '{}': at most three weights (train, valid, test)",
             excerpt(weights));
  w.resize(3, 0.0);
  const double sum = w[0] + w[1] + w[2];
  ZT_REQUIRE(sum > 0 && std::isfinite(sum), "--split '{}': the weights sum to {}", excerpt(weights),
             sum);
  // Megatron's get_split_indices: cumulative rounded boundaries (round half to even, like
  // Python's round), all shifted so the last is n.
  std::vector<int64_t> bound = {0};
  for (double x : w) bound.push_back(bound.back() + std::llrint(x / sum * static_cast<double>(n)));
  const int64_t diff = bound.back() - static_cast<int64_t>(n);
  for (size_t i = 1; i < bound.size(); ++i)
    bound[i] = std::clamp<int64_t>(bound[i] - diff, 0, static_cast<int64_t>(n));
  auto at = [&](size_t i) { return static_cast<size_t>(bound[i]); };
  return {{at(0), at(1)}, {at(1), at(2)}, {at(2), at(3)}};
}

GptDataset::GptDataset(const IndexedDataset& ds, std::pair<size_t, size_t> docs, int64_t seq_length,
                       uint64_t seed)
    : ds_(ds), seq_length_(seq_length), seed_(seed) {
  ZT_REQUIRE(seq_length > 0, "--seq-length must be positive");
  ZT_CHECK(docs.first <= docs.second && docs.second <= ds.num_documents(), "document range");
  seq_start_.push_back(0);
  for (auto s = ds.doc_idx()[docs.first]; s < ds.doc_idx()[docs.second]; ++s) {
    seqs_.push_back(static_cast<size_t>(s));
    seq_start_.push_back(seq_start_.back() + ds.sizes()[s]);
  }
  num_samples_ = (seq_start_.back() - 1) / seq_length;
  ZT_REQUIRE(num_samples_ > 0,
             "the dataset split of documents [{}, {}) has {} tokens, fewer than --seq-length+1 "
             "= {}",
             docs.first, docs.second, seq_start_.back(), seq_length + 1);
}

const std::vector<int64_t>& GptDataset::permutation(int64_t epoch) const {
  if (perm_epoch_ != epoch) {
    perm_.resize(static_cast<size_t>(num_samples_));
    for (int64_t i = 0; i < num_samples_; ++i) perm_[i] = i;
    uint64_t state = seed_ * 0x100000001B3ULL + static_cast<uint64_t>(epoch);
    for (int64_t i = num_samples_ - 1; i > 0; --i) {  // Fisher-Yates
      const auto j = static_cast<int64_t>(splitmix64(state) % static_cast<uint64_t>(i + 1));
      std::swap(perm_[i], perm_[j]);
    }
    perm_epoch_ = epoch;
  }
  return perm_;
}

int64_t GptDataset::sample_at(int64_t pos) const {
  ZT_CHECK(pos >= 0, "negative sample position {}", pos);
  return permutation(pos / num_samples_)[pos % num_samples_];
}

void GptDataset::read_sample(int64_t sample, std::span<int32_t> out) const {
  ZT_CHECK(sample >= 0 && sample < num_samples_ && out.size() == size_t(seq_length_ + 1),
           "sample {} of {}", sample, num_samples_);
  int64_t tok = sample * seq_length_;
  auto it = std::upper_bound(seq_start_.begin(), seq_start_.end(), tok) - 1;
  size_t done = 0;
  for (auto k = static_cast<size_t>(it - seq_start_.begin()); done < out.size(); ++k) {
    const int64_t off = tok - seq_start_[k];
    const auto take =
        std::min<int64_t>(seq_start_[k + 1] - tok, static_cast<int64_t>(out.size() - done));
    ds_.read(seqs_[k], static_cast<size_t>(off), out.subspan(done, static_cast<size_t>(take)));
    done += static_cast<size_t>(take);
    tok += take;
  }
}

GptLoader::GptLoader(const GptDataset& data, int64_t global_batch, int dp_rank, int dp_size,
                     int64_t consumed_samples)
    : data_(data), global_batch_(global_batch), dp_rank_(dp_rank), consumed_(consumed_samples) {
  ZT_REQUIRE(dp_size > 0 && global_batch > 0 && global_batch % dp_size == 0,
             "--global-batch-size {} must be a positive multiple of the data-parallel size {}",
             global_batch, dp_size);
  ZT_CHECK(dp_rank >= 0 && dp_rank < dp_size, "dp rank {} of {}", dp_rank, dp_size);
  local_batch_ = global_batch / dp_size;
  sample_.resize(static_cast<size_t>(data.seq_length() + 1));
}

void GptLoader::next_batch(std::span<int32_t> tokens_out, std::span<int32_t> targets_out) {
  const auto L = static_cast<size_t>(data_.seq_length());
  ZT_CHECK(tokens_out.size() == local_batch_ * L && targets_out.size() == local_batch_ * L,
           "next_batch buffers must hold local_batch * seq_length = {} ids", local_batch_ * L);
  for (int64_t b = 0; b < local_batch_; ++b) {
    data_.read_sample(data_.sample_at(consumed_ + dp_rank_ * local_batch_ + b), sample_);
    std::copy(sample_.begin(), sample_.end() - 1, tokens_out.begin() + b * L);
    std::copy(sample_.begin() + 1, sample_.end(), targets_out.begin() + b * L);
  }
  consumed_ += global_batch_;
}

}  // namespace zt::data
