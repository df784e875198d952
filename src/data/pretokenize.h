#pragma once
// Pre-tokenization: splitting text into the pieces BPE then encodes one by one, for the split
// rules of the byte-level BPE families, each written by hand over UTF-8 (no regex engine: it is
// the hot loop of encoding and of BPE training). Pieces are views into the input and together
// cover it exactly.
//
//   kGpt2     GPT-2's ByteLevel regex (GPT-2, GPT-NeoX, SmolLM after its digit split):
//               's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   kLlama3   Llama 3's Split regex (tiktoken's cl100k_base):
//               (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//               ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   kQwen2    Qwen2's: the same with \p{N} instead of \p{N}{1,3}
//   kDigits   the Digits pre-tokenizer with individual_digits: each \p{N} its own piece
//   kDigitRuns  Digits without individual_digits: each run of \p{N} one piece
// (?i:) folds as Oniguruma, the regex engine of Hugging Face `tokenizers`, does: "'S" and "'ſ"
// (U+017F, whose case fold is "s") are contractions too.
#include <optional>
#include <string_view>
#include <vector>

namespace zt::data {

enum class SplitRule : unsigned char { kGpt2, kLlama3, kQwen2, kDigits, kDigitRuns };

// The end of the piece that starts at `pos` (pos < text.size()); always > pos.
size_t next_piece(SplitRule rule, std::string_view text, size_t pos);

// The rule a tokenizer.json Split pattern (its "Regex" string) spells, compared exactly; nullopt
// for any other pattern.
std::optional<SplitRule> split_rule_of_regex(std::string_view pattern);

// GPT-2's rule as an iterator (BPE training and the GPT-2 tokenizer).
class Pretokenizer {
 public:
  explicit Pretokenizer(std::string_view text, SplitRule rule = SplitRule::kGpt2)
      : text_(text), rule_(rule) {}
  // Sets `piece` to the next piece and returns true, or returns false at the end.
  bool next(std::string_view& piece) {
    if (pos_ >= text_.size()) return false;
    const size_t end = next_piece(rule_, text_, pos_);
    piece = text_.substr(pos_, end - pos_);
    pos_ = end;
    return true;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  SplitRule rule_;
};

std::vector<std::string_view> pretokenize(std::string_view text, SplitRule rule = SplitRule::kGpt2);

}  // namespace zt::data
