#pragma once
// Learns a GPT-2 byte-level BPE from a corpus: 256 byte tokens, then merges until the target
// vocab size, then "<|endoftext|>" as the last id (GPT-2's layout: 50000 merges -> id 50256).
//
// Algorithm: the corpus is pre-tokenized exactly as encoding will split it and reduced to a
// table of distinct words with counts; pair counts are kept incrementally (a merge re-counts
// only the words that contain the merged pair) and the best pair comes from a lazy max-heap.
// Ties between equally frequent pairs go to the smallest (left id, right id), so the result is
// deterministic and independent of hash-map order and thread count.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace zt::data {

struct BpeModel {
  std::vector<std::string> tokens;                  // raw bytes of each id
  std::vector<std::pair<int32_t, int32_t>> merges;  // in rank order
  int32_t eod = -1;                                 // id of "<|endoftext|>"
};

class BpeTrainer {
 public:
  // Pre-tokenizes `text` and adds its words to the frequency table; call once per document or
  // per chunk (a chunk boundary splits at most one word).
  void add_text(std::string_view text);
  size_t distinct_words() const { return words_.size(); }

  // vocab_size counts the 256 bytes, the merges and "<|endoftext|>"; training stops early when
  // no pair occurs at least min_frequency times. Throws InputError if vocab_size < 257.
  BpeModel train(int32_t vocab_size, int64_t min_frequency = 2) const;

 private:
  std::unordered_map<std::string, int64_t> words_;
};

// GPT-2's file formats: vocab.json in id order, merges.txt with a "#version: 0.2" first line.
std::string vocab_json(const BpeModel& m);
std::string merges_txt(const BpeModel& m);
// Writes dir/vocab.json and dir/merges.txt (creating dir).
void write_bpe_files(const BpeModel& m, const std::string& dir);

}  // namespace zt::data
