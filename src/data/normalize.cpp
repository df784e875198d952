#include "src/data/normalize.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/data/unicode.h"

namespace zt::data {
namespace {

struct CccRange {
  uint32_t lo, hi;
  uint8_t ccc;
};
constexpr CccRange kCcc[] = {
#define ZT_NFC_CCC
#include "src/data/unicode_nfc.inc"
#undef ZT_NFC_CCC
};
struct Range {
  uint32_t lo, hi;
};
constexpr Range kUnsafe[] = {
#define ZT_NFC_UNSAFE
#include "src/data/unicode_nfc.inc"
#undef ZT_NFC_UNSAFE
};
constexpr uint32_t kDecomp[] = {
#define ZT_NFC_DECOMP
#include "src/data/unicode_nfc.inc"
#undef ZT_NFC_DECOMP
};
struct Compose {
  uint32_t a, b, c;
};
constexpr Compose kCompose[] = {
#define ZT_NFC_COMPOSE
#include "src/data/unicode_nfc.inc"
#undef ZT_NFC_COMPOSE
};

constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kSCount = 11172;
constexpr uint32_t kInvalid = 0x110000;  // + the byte: an invalid UTF-8 byte, kept as it is

template <class R>
const R* find_range(const R* begin, const R* end, uint32_t cp) {
  const R* it = std::upper_bound(begin, end, cp, [](uint32_t c, const R& r) { return c < r.lo; });
  if (it == begin) return nullptr;
  --it;
  return cp <= it->hi ? it : nullptr;
}

uint8_t ccc(uint32_t cp) {
  if (cp < 0x300 || cp >= kInvalid) return 0;
  const CccRange* r = find_range(std::begin(kCcc), std::end(kCcc), cp);
  return r ? r->ccc : 0;
}

bool unsafe(uint32_t cp) {
  return cp >= 0x300 && cp < kInvalid &&
         find_range(std::begin(kUnsafe), std::end(kUnsafe), cp) != nullptr;
}

// Index of each decomposition in kDecomp, by code point.
struct DecompIndex {
  std::vector<std::pair<uint32_t, uint32_t>> at;  // (code point, offset of its first part)
  DecompIndex() {
    for (uint32_t i = 0; i < std::size(kDecomp);) {
      at.emplace_back(kDecomp[i], i + 1);
      i += 1;
      while (kDecomp[i] != 0) ++i;
      ++i;
    }
  }
};

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / (kVCount * kTCount));
    out.push_back(kVBase + (s % (kVCount * kTCount)) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  static const DecompIndex index;
  auto it = std::lower_bound(index.at.begin(), index.at.end(), std::pair{cp, 0u});
  if (it == index.at.end() || it->first != cp) {
    out.push_back(cp);
    return;
  }
  for (uint32_t i = it->second; kDecomp[i] != 0; ++i) out.push_back(kDecomp[i]);
}

// The primary composite of a + b, or 0.
uint32_t compose(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  const Compose* it = std::lower_bound(
      std::begin(kCompose), std::end(kCompose), Compose{a, b, 0},
      [](const Compose& x, const Compose& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
  return it != std::end(kCompose) && it->a == a && it->b == b ? it->c : 0;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp >= kInvalid) {
    out += static_cast<char>(cp - kInvalid);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

bool nfc_is_identity(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const CodePoint c = decode_utf8(text, pos);
    if (unsafe(c.cp)) return false;
    pos += c.len;
  }
  return true;
}

void nfc(std::string_view text, std::string& out) {
  std::vector<uint32_t> d;
  d.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const CodePoint c = decode_utf8(text, pos);
    decompose(c.cp, d);
    pos += c.len;
  }
  // Canonical order: a stable sort of each run of marks by class.
  for (size_t i = 0; i < d.size();) {
    if (ccc(d[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < d.size() && ccc(d[j]) != 0) ++j;
    std::stable_sort(d.begin() + static_cast<std::ptrdiff_t>(i),
                     d.begin() + static_cast<std::ptrdiff_t>(j),
                     [](uint32_t a, uint32_t b) { return ccc(a) < ccc(b); });
    i = j;
  }
  // Canonical composition (UAX #15): each mark or starter joins the last starter unless a mark
  // of the same or a higher class, or a starter, stands between them.
  if (!d.empty()) {
    size_t starter = 0, w = 1;
    int last = ccc(d[0]) ? 256 : 0;
    for (size_t r = 1; r < d.size(); ++r) {
      const uint32_t ch = d[r];
      const int cls = ccc(ch);
      const uint32_t comp = d[starter] < kInvalid && ch < kInvalid ? compose(d[starter], ch) : 0;
      if (comp && (last < cls || last == 0) && !(last == 0 && w != starter + 1)) {
        d[starter] = comp;
        continue;
      }
      if (cls == 0) starter = w;
      last = cls;
      d[w++] = ch;
    }
    d.resize(w);
  }
  for (uint32_t cp : d) append_utf8(out, cp);
}

}  // namespace zt::data
