#include "src/data/byte_unicode.h"

#include "src/data/unicode.h"

namespace zt::data {
namespace {

struct Tables {
  std::array<uint8_t, 256> order{};
  std::array<uint32_t, 256> cp{};
  std::array<int16_t, 324> from_cp{};  // code points used are < 256 + 68
};

Tables make_tables() {
  Tables t;
  t.from_cp.fill(-1);
  auto printable = [](int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  int i = 0;
  for (int b = 0; b < 256; ++b)
    if (printable(b)) {
      t.order[i++] = static_cast<uint8_t>(b);
      t.cp[b] = static_cast<uint32_t>(b);
    }
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b)
    if (!printable(b)) {
      t.order[i++] = static_cast<uint8_t>(b);
      t.cp[b] = next++;
    }
  for (int b = 0; b < 256; ++b) t.from_cp[t.cp[b]] = static_cast<int16_t>(b);
  return t;
}

const Tables& tables() {
  static const Tables t = make_tables();
  return t;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {  // every byte's spelling is below U+0800
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

const std::array<uint8_t, 256>& byte_order() {
  return tables().order;
}
uint32_t byte_to_codepoint(uint8_t b) {
  return tables().cp[b];
}

std::string bytes_to_vocab_string(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, tables().cp[static_cast<uint8_t>(c)]);
  return out;
}

std::optional<std::string> vocab_string_to_bytes(std::string_view s) {
  std::string out;
  for (size_t pos = 0; pos < s.size();) {
    const CodePoint c = decode_utf8(s, pos);
    if (c.cp >= tables().from_cp.size() || tables().from_cp[c.cp] < 0) return std::nullopt;
    out += static_cast<char>(tables().from_cp[c.cp]);
    pos += c.len;
  }
  return out;
}

}  // namespace zt::data
