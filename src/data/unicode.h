#pragma once
// UTF-8 decoding and the three Unicode classes GPT-2's pre-tokenizer distinguishes. Invalid
// UTF-8 never throws: each bad byte decodes as one code point of class kOther, so arbitrary bytes
// (binary junk in a corpus) still tokenize, byte-level, instead of aborting a long run.
#include <cstdint>
#include <string_view>

namespace zt::data {

enum CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 4 };

struct CodePoint {
  uint32_t cp;   // U+FFFD-free: an invalid byte b decodes as 0x110000 + b (class kOther)
  uint32_t len;  // bytes consumed, 1..4
};

// Decodes the code point starting at text[pos] (pos < text.size()).
inline CodePoint decode_utf8(std::string_view text, size_t pos) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) return {b0, 1};
  const size_t left = text.size() - pos;
  auto cont = [&](size_t i) {
    return i < left && (static_cast<unsigned char>(text[pos + i]) & 0xC0) == 0x80;
  };
  auto bits = [&](size_t i) { return static_cast<uint32_t>(text[pos + i]) & 0x3F; };
  const CodePoint bad{0x110000u + b0, 1};
  if (b0 >= 0xC2 && b0 < 0xE0) {
    if (!cont(1)) return bad;
    return {((b0 & 0x1Fu) << 6) | bits(1), 2};
  }
  if (b0 >= 0xE0 && b0 < 0xF0) {
    if (!cont(1) || !cont(2)) return bad;
    const uint32_t cp = ((b0 & 0x0Fu) << 12) | (bits(1) << 6) | bits(2);
    if (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000)) return bad;  // overlong or surrogate
    return {cp, 3};
  }
  if (b0 >= 0xF0 && b0 < 0xF5) {
    if (!cont(1) || !cont(2) || !cont(3)) return bad;
    const uint32_t cp = ((b0 & 0x07u) << 18) | (bits(1) << 12) | (bits(2) << 6) | bits(3);
    if (cp < 0x10000 || cp > 0x10FFFF) return bad;
    return {cp, 4};
  }
  return bad;
}

// \p{L}, \p{N}, \s as the Python `regex` module defines them, at Unicode 16.0.0 (the tokenizers'
// version; table in unicode_classes.inc, checked at every code point by data_unicode_test).
CharClass char_class(uint32_t cp);

}  // namespace zt::data
