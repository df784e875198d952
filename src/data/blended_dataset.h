#pragma once
// Several GPT datasets blended by weight, as Megatron's BlendedDataset: position i of the blend
// goes to the dataset whose share so far lags its weight the most (helpers.cpp
// build_blending_indices: argmax_d w_d·max(i,1) − taken_d, first d on ties), at that dataset's
// next position. The choice depends only on the weights, so the interleaving is deterministic,
// identical on every rank and exactly the sequence Megatron builds.
//
// Also the parser of --data-path's Megatron forms: "P" (one dataset) or "w1 P1 w2 P2 …".
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/data/gpt_dataset.h"

namespace zt::data {

// The dataset index of a blend position is a uint8_t, as in Megatron's helpers.
inline constexpr size_t kMaxBlendDatasets = 255;

struct DataBlend {
  std::vector<std::string> prefixes;
  std::vector<double> weights;  // normalised to sum 1
};

// Splits `words` on whitespace. Throws InputError on odd forms, non-numeric, non-positive or
// non-finite weights (or a sum that overflows), and more than kMaxBlendDatasets datasets.
DataBlend parse_data_path(std::string_view words);

class BlendedDataset {
 public:
  // `parts` must outlive this; all must have the same seq_length. weights > 0 (normalised here).
  BlendedDataset(std::vector<const GptDataset*> parts, std::vector<double> weights);

  int64_t seq_length() const { return parts_.front()->seq_length(); }
  size_t num_parts() const { return parts_.size(); }
  // (dataset, position in that dataset's shuffled stream) of blend position `pos`.
  std::pair<size_t, int64_t> locate(int64_t pos) const;
  // The seq_length + 1 tokens at blend position `pos`.
  void read(int64_t pos, std::span<int32_t> out) const;

 private:
  void extend_to(int64_t n) const;

  std::vector<const GptDataset*> parts_;
  std::vector<double> weights_;
  // Built lazily and kept (the greedy choice is sequential): 9 bytes per position used so far.
  mutable std::vector<uint8_t> dataset_index_;
  mutable std::vector<int64_t> dataset_sample_index_;
  mutable std::vector<int64_t> taken_;
};

}  // namespace zt::data
