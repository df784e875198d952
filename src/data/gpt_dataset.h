#pragma once
// GPT training samples over a Megatron indexed dataset, and the DP-sharded loader.
//
// A split (train/valid/test, by Megatron's --split weights over documents) is its documents'
// tokens concatenated in order; sample i is tokens [i*L, i*L + L + 1) of that stream (L =
// seq_length, samples overlap by the one token that is the last target), so samples span
// document boundaries and no token is dropped except the tail. Epoch e visits the samples in a
// permutation drawn from (seed, e) with a portable generator, so every platform and every run
// sees the same order.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/data/indexed_dataset.h"

namespace zt::data {

enum class Split { kTrain = 0, kValid = 1, kTest = 2 };

// Megatron's --split "949,50,1": document ranges [begin, end) for train, valid, test.
// Throws InputError on a malformed string.
std::vector<std::pair<size_t, size_t>> split_documents(const std::string& weights,
                                                       size_t num_documents);

class GptDataset {
 public:
  // `ds` must outlive this. Throws InputError if the split has fewer than seq_length+1 tokens.
  GptDataset(const IndexedDataset& ds, std::pair<size_t, size_t> doc_range, int64_t seq_length,
             uint64_t seed);

  int64_t seq_length() const { return seq_length_; }
  int64_t num_samples() const { return num_samples_; }  // per epoch
  // The sample at position `pos` of the endless shuffled stream (epoch pos / num_samples).
  int64_t sample_at(int64_t pos) const;
  // Copies sample `sample` (seq_length + 1 tokens) into out.
  void read_sample(int64_t sample, std::span<int32_t> out) const;

 private:
  const std::vector<int64_t>& permutation(int64_t epoch) const;

  const IndexedDataset& ds_;
  std::vector<size_t> seqs_;        // sequences of the split, in order
  std::vector<int64_t> seq_start_;  // token offset of each in the stream (+ total at the end)
  int64_t seq_length_;
  int64_t num_samples_;
  uint64_t seed_;
  mutable int64_t perm_epoch_ = -1;
  mutable std::vector<int64_t> perm_;
};

// Hands each DP rank its share of every global batch: rank r gets positions
// [c + r*B, c + (r+1)*B) of the shuffled stream, c = consumed samples, B = global / dp.
// Resuming with the saved consumed_samples() gives exactly the batches of an uninterrupted run.
class GptLoader {
 public:
  GptLoader(const GptDataset& data, int64_t global_batch, int dp_rank, int dp_size,
            int64_t consumed_samples = 0);
  int64_t local_batch() const { return local_batch_; }
  int64_t consumed_samples() const { return consumed_; }
  // tokens_out and targets_out hold local_batch * seq_length ids each (row-major
  // [sample][position]); targets are the tokens shifted by one. Advances by one global batch.
  void next_batch(std::span<int32_t> tokens_out, std::span<int32_t> targets_out);

 private:
  const GptDataset& data_;
  int64_t global_batch_, local_batch_;
  int dp_rank_;
  int64_t consumed_;
  std::vector<int32_t> sample_;
};

}  // namespace zt::data
