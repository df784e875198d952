#include "src/data/unicode.h"

#include <algorithm>
#include <array>

namespace zt::data {
namespace {

struct Range {
  uint32_t lo, hi;
  uint8_t cls;
};

constexpr Range kRanges[] = {
#include "src/data/unicode_classes.inc"
};

// ASCII is most of any English corpus: answer it from a 128-entry table, not a search.
constexpr std::array<uint8_t, 128> make_ascii() {
  std::array<uint8_t, 128> t{};
  for (const auto& r : kRanges)
    for (uint32_t c = r.lo; c <= r.hi && c < 128; ++c) t[c] = r.cls;
  return t;
}
constexpr auto kAscii = make_ascii();

}  // namespace

CharClass char_class(uint32_t cp) {
  if (cp < 128) return static_cast<CharClass>(kAscii[cp]);
  const auto* it = std::upper_bound(std::begin(kRanges), std::end(kRanges), cp,
                                    [](uint32_t c, const Range& r) { return c < r.lo; });
  if (it == std::begin(kRanges)) return kOther;
  --it;
  return cp <= it->hi ? static_cast<CharClass>(it->cls) : kOther;
}

}  // namespace zt::data
