// The pre-tokenizer's character classes at every code point against a committed fixture made by
// Python's `regex` module at Unicode 16.0.0 (tests/fixtures/make_unicode_fixture.py), the
// version of the tokenizers users compare with; zerotron's own table is built another way
// (scripts/gen_unicode_classes.py, from unicodedata2's categories).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/data/unicode.h"

namespace zt::data {
namespace {

constexpr uint32_t kCodePoints = 0x110000;

std::vector<uint8_t> load_fixture(std::string& header) {
  std::ifstream in(std::string(ZT_FIXTURES) + "/unicode_16_classes.txt");
  EXPECT_TRUE(in.good());
  std::getline(in, header);
  std::vector<uint8_t> cls(kCodePoints, kOther);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string lo, hi, names;
    s >> lo >> hi >> names;
    uint8_t c = 0;
    if (names.find('L') != std::string::npos) c |= kLetter;
    if (names.find('N') != std::string::npos) c |= kNumber;
    if (names.find('S') != std::string::npos) c |= kSpace;
    for (uint32_t cp = std::stoul(lo, nullptr, 16); cp <= std::stoul(hi, nullptr, 16); ++cp)
      cls.at(cp) = c;
  }
  return cls;
}

TEST(Unicode, EveryCodePointMatchesTheUnicode16Fixture) {
  std::string header;
  const std::vector<uint8_t> want = load_fixture(header);
  EXPECT_NE(header.find("Unicode 16.0.0"), std::string::npos) << header;
  size_t differ = 0, classified = 0;
  for (uint32_t cp = 0; cp < kCodePoints; ++cp) {
    const uint8_t got = char_class(cp);
    classified += got != kOther;
    if (got != want[cp] && ++differ <= 5)
      ADD_FAILURE() << "U+" << std::hex << cp << ": class " << int{got} << ", fixture "
                    << int{want[cp]};
  }
  EXPECT_EQ(differ, 0u);
  EXPECT_GT(classified, 100000u);  // the fixture is not empty: ~140k letters and numbers
}

TEST(Unicode, CharactersAddedInUnicode17AreNotClassified) {
  // U+088F (Arabic letter, Unicode 17) and U+11DE0 (a digit, Unicode 17) are unassigned in 16.
  EXPECT_EQ(char_class(0x088F), kOther);
  EXPECT_EQ(char_class(0x11DE0), kOther);
  EXPECT_EQ(char_class(0x0870), kLetter);  // Unicode 14: a letter in both
}

}  // namespace
}  // namespace zt::data
