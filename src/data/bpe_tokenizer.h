#pragma once
// Byte-level BPE, from either of two sources:
//  - GPT-2's vocab.json + merges.txt (Megatron's GPT2BPETokenizer): the same ids as OpenAI's
//    encoder.py / Hugging Face `tokenizers` ByteLevel BPE. Text is encoded as ordinary text: a
//    literal "<|endoftext|>" in a document is not the end-of-document token (as in Megatron's
//    preprocess_data.py).
//  - a Hugging Face tokenizer.json of the byte-level BPE kind (Megatron's HuggingFaceTokenizer):
//    the ids of `tokenizers`' Tokenizer.encode(text) with its defaults, which are what Megatron's
//    preprocessing stores: added tokens are matched in the text first (a literal
//    "<|endoftext|>" is that token), then NFC if the file asks for it, the pre-tokenizer's split
//    rules, ignore_merges, and the
//    post-processor's template tokens (Llama 3's <|begin_of_text|>) around each document. The
//    reader is src/data/hf_tokenizer.cpp; it refuses every setting it does not reproduce.
// eod() is appended by the caller, after any template tokens.
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
#include "src/data/pretokenize.h"

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
  // A Hugging Face tokenizer.json (src/data/hf_tokenizer.cpp). Throws InputError naming the key
  // of anything that is not byte-level BPE or that zerotron does not reproduce exactly. The
  // file's eod is the "eos_token" of a tokenizer_config.json beside it when there is one. `path`
  // is the file or the directory holding tokenizer.json.
  static BpeTokenizer from_hf_file(const std::string& path);
  // `name` labels error messages; `eos_token` names eod() (empty: the first of the special
  // tokens <|endoftext|>, <|end_of_text|>, </s>, <eos> the file has).
  static BpeTokenizer from_hf_json(std::string_view tokenizer_json,
                                   std::string_view name = "tokenizer.json",
                                   std::string_view eos_token = {});

  int32_t vocab_size() const { return static_cast<int32_t>(id_to_bytes_.size()); }
  size_t num_merges() const { return merges_.size(); }
  // The end-of-document token: "<|endoftext|>" of a GPT-2 vocab, the eos token of a
  // tokenizer.json; nullopt when there is none.
  std::optional<int32_t> eod() const { return eod_; }
  // Template tokens a tokenizer.json's post-processor puts around every document.
  const std::vector<int32_t>& prefix_ids() const { return prefix_ids_; }
  const std::vector<int32_t>& suffix_ids() const { return suffix_ids_; }

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
  // Text between added tokens: the split rules, then BPE.
  void encode_text(std::string_view text, EncodeCache& cache, std::vector<int32_t>& out) const;
  void encode_pieces(std::string_view text, size_t stage, EncodeCache& cache,
                     std::vector<int32_t>& out) const;
  void split_pieces(std::string_view text, size_t stage, EncodeCache& cache,
                    std::vector<int32_t>& out) const;
  // Text between unnormalized added tokens: the normalizer, then the normalized added tokens.
  void encode_normalized(std::string_view text, EncodeCache& cache,
                         std::vector<int32_t>& out) const;
  // Matches the added tokens of pass `pass` (0: not normalized, 1: normalized) in `text`,
  // leftmost-longest, encoding the text between them with the next pass.
  void encode_added(std::string_view text, int pass, EncodeCache& cache,
                    std::vector<int32_t>& out) const;

  std::vector<std::string> id_to_bytes_;
  std::array<int32_t, 256> byte_id_{};
  PairMap merges_;
  std::optional<int32_t> eod_;

  // The normalizer: NFC or none.
  bool nfc_ = false;
  // Pre-tokenization: the split rules in order, each applied to the pieces of the one before;
  // with prefix_space_, a space is put before each piece that reaches ByteLevel (after the rules
  // of stages [0, prefix_stage_)) not starting with one.
  std::vector<SplitRule> rules_ = {SplitRule::kGpt2};
  bool prefix_space_ = false;
  size_t prefix_stage_ = 0;
  // ignore_merges: a piece that is itself a vocab token is that token.
  bool ignore_merges_ = false;
  std::unordered_map<std::string, int32_t> word_id_;
  struct AddedToken {
    std::string content;
    int32_t id;
    bool lstrip, rstrip;
  };
  std::vector<AddedToken> added_;
  // Per pass, per first byte: indices into added_, longest content first.
  std::array<std::array<std::vector<uint32_t>, 256>, 2> added_by_byte_;
  bool has_added_[2] = {false, false};
  // Per pass, the first byte every added token shares, or -1.
  int added_first_[2] = {-1, -1};
  std::vector<int32_t> prefix_ids_, suffix_ids_;
};

inline constexpr std::string_view kEndOfText = "<|endoftext|>";

// The tokenizer Megatron's flags name: GPT2BPETokenizer (vocab.json + merges.txt) or
// HuggingFaceTokenizer (a tokenizer.json or its directory). Throws InputError naming the flag
// that is missing or does not belong to the type.
BpeTokenizer load_tokenizer(std::string_view type, const std::string& vocab_json,
                            const std::string& merges_txt, const std::string& tokenizer_model);

}  // namespace zt::data
