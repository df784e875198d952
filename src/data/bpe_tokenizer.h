#pragma once
// GPT-2 byte-level BPE (Megatron's GPT2BPETokenizer): loads the standard vocab.json + merges.txt
// and gives the same ids as OpenAI's encoder.py / Hugging Face `tokenizers` ByteLevel BPE.
// Text is encoded as ordinary text: a literal "<|endoftext|>" in a document is not the
// end-of-document token (as in Megatron's preprocess_data.py); eod() is appended by the caller.
//
// Thread safety: a BpeTokenizer is immutable after construction; give each thread its own
// EncodeCache and call encode() concurrently.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/data/pair_map.h"

namespace zt::data {

// Per-thread memo of word -> ids. Natural text repeats words, so most pieces skip BPE entirely.
class EncodeCache {
 public:
  explicit EncodeCache(size_t max_entries = 1 << 20) : max_entries_(max_entries) {}

 private:
  friend class BpeTokenizer;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> map_;
  std::vector<int32_t> scratch_;
  size_t max_entries_;
};

class BpeTokenizer {
 public:
  // Throws InputError naming the file and line on any malformed or inconsistent entry.
  static BpeTokenizer from_files(const std::string& vocab_json, const std::string& merges_txt);
  // From in-memory contents; `vocab_name`/`merges_name` only label error messages.
  static BpeTokenizer from_strings(std::string_view vocab_json, std::string_view merges_txt,
                                   std::string_view vocab_name = "vocab.json",
                                   std::string_view merges_name = "merges.txt");

  int32_t vocab_size() const { return static_cast<int32_t>(id_to_bytes_.size()); }
  size_t num_merges() const { return merges_.size(); }
  // The id of "<|endoftext|>", if the vocab has it.
  std::optional<int32_t> eod() const { return eod_; }

  // Appends the ids of `text` to `out`.
  void encode(std::string_view text, EncodeCache& cache, std::vector<int32_t>& out) const;
  std::vector<int32_t> encode(std::string_view text) const;
  // Concatenated bytes of the tokens (may end mid-UTF-8 sequence if the ids do).
  // Throws InputError on an id outside the vocab.
  std::string decode(std::span<const int32_t> ids) const;
  const std::string& token_bytes(int32_t id) const { return id_to_bytes_.at(id); }

 private:
  BpeTokenizer() = default;
  void encode_word(std::string_view word, EncodeCache& cache, std::vector<int32_t>& out) const;

  std::vector<std::string> id_to_bytes_;
  std::array<int32_t, 256> byte_id_{};
  PairMap merges_;
  std::optional<int32_t> eod_;
};

inline constexpr std::string_view kEndOfText = "<|endoftext|>";

}  // namespace zt::data
