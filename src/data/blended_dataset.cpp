#include "src/data/blended_dataset.h"

#include <charconv>
#include <cmath>
#include <numeric>

#include "src/core/error.h"
#include "src/core/input_file.h"

namespace zt::data {
namespace {

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> w;
  size_t pos = 0;
  while (true) {
    pos = s.find_first_not_of(" \t\n", pos);
    if (pos == std::string_view::npos) return w;
    const size_t end = std::min(s.find_first_of(" \t\n", pos), s.size());
    w.push_back(s.substr(pos, end - pos));
    pos = end;
  }
}

}  // namespace

DataBlend parse_data_path(std::string_view words) {
  const auto w = split_words(words);
  ZT_REQUIRE(!w.empty(), "--data-path is empty");
  DataBlend b;
  if (w.size() == 1) {
    b.prefixes = {std::string(w[0])};
    b.weights = {1.0};
    return b;
  }
  ZT_REQUIRE(w.size() % 2 == 0,
             "--data-path '{}': expected one prefix or pairs of weight and prefix (0.7 a 0.3 b)",
             excerpt(words, 80));
  // The blend's dataset index is one byte per sample, as Megatron's.
  ZT_REQUIRE(w.size() / 2 <= kMaxBlendDatasets,
             "--data-path: {} datasets; a blend takes at most {}", w.size() / 2, kMaxBlendDatasets);
  double sum = 0;
  for (size_t i = 0; i < w.size(); i += 2) {
    double v = 0;
    const auto [p, ec] = std::from_chars(w[i].data(), w[i].data() + w[i].size(), v);
    ZT_REQUIRE(ec == std::errc{} && p == w[i].data() + w[i].size() && std::isfinite(v),
               "--data-path: '{}' is not a weight (expected weight prefix pairs: 0.7 a 0.3 b)",
               excerpt(w[i]));
    ZT_REQUIRE(v > 0, "--data-path: the weight of '{}' must be positive, got {}", excerpt(w[i + 1]),
               v);
    b.weights.push_back(v);
    b.prefixes.emplace_back(w[i + 1]);
    sum += v;
  }
  ZT_REQUIRE(std::isfinite(sum),
             "--data-path: the weights sum to infinity; use relative weights "
             "such as 0.7 and 0.3");
  for (size_t i = 0; i < b.weights.size(); ++i) {
    b.weights[i] /= sum;
    // A weight below ~1e-308 of the total rounds to zero share: the dataset would never be read.
    ZT_REQUIRE(b.weights[i] > 0, "--data-path: the weight of '{}' is too small a share of {}",
               excerpt(b.prefixes[i]), sum);
  }
  return b;
}

BlendedDataset::BlendedDataset(std::vector<const GptDataset*> parts, std::vector<double> weights)
    : parts_(std::move(parts)), weights_(std::move(weights)), taken_(parts_.size(), 0) {
  // uint8_t dataset index, as Megatron's.
  ZT_CHECK(
      !parts_.empty() && parts_.size() <= kMaxBlendDatasets && parts_.size() == weights_.size(),
      "{} datasets, {} weights", parts_.size(), weights_.size());
  for (const auto* p : parts_)
    ZT_CHECK(p->seq_length() == seq_length(), "blended datasets differ in seq_length");
  const double sum = std::accumulate(weights_.begin(), weights_.end(), 0.0);
  for (auto& w : weights_) {
    ZT_CHECK(w > 0, "blend weight {}", w);
    w /= sum;
  }
}

void BlendedDataset::extend_to(int64_t n) const {
  if (static_cast<int64_t>(dataset_index_.size()) >= n) return;
  // Grow geometrically so a run's sequential reads cost amortised O(datasets) per position.
  const auto target = std::max<int64_t>(n, static_cast<int64_t>(dataset_index_.size()) * 2);
  dataset_index_.reserve(static_cast<size_t>(target));
  dataset_sample_index_.reserve(static_cast<size_t>(target));
  for (auto i = static_cast<int64_t>(dataset_index_.size()); i < target; ++i) {
    const double x = std::max(static_cast<double>(i), 1.0);
    size_t best = 0;
    double best_err = weights_[0] * x - static_cast<double>(taken_[0]);
    for (size_t d = 1; d < parts_.size(); ++d) {
      const double err = weights_[d] * x - static_cast<double>(taken_[d]);
      if (err > best_err) {
        best = d;
        best_err = err;
      }
    }
    dataset_index_.push_back(static_cast<uint8_t>(best));
    dataset_sample_index_.push_back(taken_[best]++);
  }
}

std::pair<size_t, int64_t> BlendedDataset::locate(int64_t pos) const {
  ZT_CHECK(pos >= 0, "negative blend position {}", pos);
  if (parts_.size() == 1) return {0, pos};  // no index needed
  extend_to(pos + 1);
  const auto i = static_cast<size_t>(pos);
  return {dataset_index_[i], dataset_sample_index_[i]};
}

void BlendedDataset::read(int64_t pos, std::span<int32_t> out) const {
  const auto [d, k] = locate(pos);
  const GptDataset& g = *parts_[d];
  g.read_sample(g.sample_at(k), out);
}

}  // namespace zt::data
