#pragma once
// GPT-2's bytes_to_unicode(): vocab.json and merges.txt spell every byte as a printable code
// point (printable Latin-1 bytes as themselves, the other 68 bytes as U+0100 onwards) so that
// the files are whitespace- and control-character-free text.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zt::data {

// byte_order()[i] is the byte GPT-2 gives token id i (its vocab starts with the 256 bytes in
// this order: '!' is id 0).
const std::array<uint8_t, 256>& byte_order();
uint32_t byte_to_codepoint(uint8_t b);

// Raw bytes -> the UTF-8 spelling used in the vocab files.
std::string bytes_to_vocab_string(std::string_view bytes);
// The inverse; nullopt when `s` holds a code point that is not a byte's spelling.
std::optional<std::string> vocab_string_to_bytes(std::string_view s);

}  // namespace zt::data
