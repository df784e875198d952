#pragma once
// GPT-2's pre-tokenization: splits text into the pieces its regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// finds, written by hand over UTF-8 (no regex engine: it is the hot loop of encoding and of
// BPE training). Pieces are views into the input and together cover it exactly.
#include <string_view>
#include <vector>

namespace zt::data {

class Pretokenizer {
 public:
  explicit Pretokenizer(std::string_view text) : text_(text) {}
  // Sets `piece` to the next piece and returns true, or returns false at the end.
  bool next(std::string_view& piece);

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

std::vector<std::string_view> pretokenize(std::string_view text);

}  // namespace zt::data
