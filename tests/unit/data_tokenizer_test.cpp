// GPT-2 BPE: pre-tokenization and ids against the committed reference fixture (made by Python
// `regex` and Hugging Face `tokenizers`, see tests/fixtures/make_tokenizer_fixture.py), decode
// round trips, the two merge algorithms, and malformed vocab/merges files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "src/core/error.h"
#include "src/data/bpe_merge.h"
#include "src/data/bpe_tokenizer.h"
#include "src/data/byte_unicode.h"
#include "src/data/pretokenize.h"
#include "tests/support/data_testing.h"

namespace zt::data {
namespace {

using testing::fixture;

const BpeTokenizer& kjv() {
  static const BpeTokenizer t =
      BpeTokenizer::from_files(fixture("bpe_kjv/vocab.json"), fixture("bpe_kjv/merges.txt"));
  return t;
}

nlohmann::json cases() {
  return nlohmann::json::parse(read_file(fixture("tokenizer_cases.json")));
}

TEST(ByteUnicode, MatchesGpt2Table) {
  EXPECT_EQ(byte_order()[0], '!');
  EXPECT_EQ(byte_to_codepoint(' '), 0x120u);   // 'Ġ'
  EXPECT_EQ(byte_to_codepoint('\n'), 0x10Au);  // 'Ċ'
  EXPECT_EQ(byte_to_codepoint(0xAD), 0x143u);  // the last non-printable byte
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(vocab_string_to_bytes(bytes_to_vocab_string(all)), all);
  EXPECT_FALSE(vocab_string_to_bytes("\xE2\x82\xAC").has_value());  // '€' spells no byte
}

TEST(Pretokenize, MatchesPythonRegexOnFixture) {
  for (const auto& c : cases()) {
    const auto text = c["text"].get<std::string>();
    std::vector<std::string> want = c["pieces"], got;
    for (auto p : pretokenize(text)) got.emplace_back(p);
    EXPECT_EQ(got, want) << "text: " << text;
  }
}

TEST(Pretokenize, GptSpecificRules) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(pretokenize("a  b"), (V{"a", " ", " b"}));  // \s+(?!\S) gives back one space
  EXPECT_EQ(pretokenize("a\n b"), (V{"a", "\n", " b"}));
  EXPECT_EQ(pretokenize("x   "), (V{"x", "   "}));  // at the end the run stays whole
  EXPECT_EQ(pretokenize("don't"), (V{"don", "'t"}));
  EXPECT_EQ(pretokenize("DON'T"), (V{"DON", "'", "T"}));  // contractions are lowercase only
  EXPECT_EQ(pretokenize(" 123abc"), (V{" 123", "abc"}));
}

TEST(Pretokenize, InvalidUtf8IsKeptBytewise) {
  const std::string bad = "ok \xFF\xFE x\xC3";
  std::string joined;
  for (auto p : pretokenize(bad)) joined += p;
  EXPECT_EQ(joined, bad);
  EXPECT_EQ(kjv().decode(kjv().encode(bad)), bad);
}

TEST(BpeTokenizer, IdsMatchReferenceFixture) {
  for (const auto& c : cases()) {
    const auto text = c["text"].get<std::string>();
    const std::vector<int32_t> want = c["ids"];
    EXPECT_EQ(kjv().encode(text), want) << "text: " << text;
  }
}

TEST(BpeTokenizer, RoundTripsTextToIdsToText) {
  for (const auto& c : cases()) {
    const auto text = c["text"].get<std::string>();
    EXPECT_EQ(kjv().decode(kjv().encode(text)), text);
  }
  const std::string corpus = read_file(fixture("bpe_train_corpus.txt"));
  const auto ids = kjv().encode(corpus);
  EXPECT_EQ(kjv().decode(ids), corpus);
  EXPECT_LT(ids.size(), corpus.size() / 3);  // it did learn something
}

TEST(BpeTokenizer, CacheDoesNotChangeIds) {
  EncodeCache tiny(2);  // forces the clear-when-full path
  const std::string corpus = read_file(fixture("bpe_train_corpus.txt"));
  std::vector<int32_t> a;
  kjv().encode(corpus, tiny, a);
  EXPECT_EQ(a, kjv().encode(corpus));
}

TEST(BpeTokenizer, EodAndVocab) {
  EXPECT_EQ(kjv().vocab_size(), 800);
  ASSERT_TRUE(kjv().eod().has_value());
  EXPECT_EQ(*kjv().eod(), 799);
  EXPECT_EQ(kjv().decode(std::vector<int32_t>{*kjv().eod()}), "<|endoftext|>");
  // A literal "<|endoftext|>" in text is ordinary text, as in Megatron's preprocessing.
  const auto ids = kjv().encode("<|endoftext|>");
  EXPECT_GT(ids.size(), 1u);
  EXPECT_THROW(kjv().decode(std::vector<int32_t>{800}), InputError);
}

TEST(BpeMerge, HeapAndRescanAgree) {
  // A random merge table over 4 base symbols, including self-pairs (the overlap case "aaa").
  std::mt19937 rng(7);
  PairMap merges(64);
  int32_t next_id = 4;
  for (int32_t rank = 0; rank < 40; ++rank) {
    const auto a = static_cast<int32_t>(rng() % next_id), b = static_cast<int32_t>(rng() % next_id);
    if (merges.insert(a, b, Merge{rank, next_id})) ++next_id;
  }
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int32_t> s(1 + rng() % 300);
    const uint32_t symbols = 1 + rng() % 4;  // few symbols -> long repeated runs
    for (auto& x : s) x = static_cast<int32_t>(rng() % symbols);
    auto r = s, h = s;
    bpe_merge_rescan(merges, r);
    bpe_merge_heap(merges, h);
    ASSERT_EQ(r, h) << "trial " << trial;
  }
}

TEST(BpeTokenizer, RejectsMalformedFiles) {
  const std::string vocab = read_file(fixture("bpe_kjv/vocab.json"));
  const std::string merges = read_file(fixture("bpe_kjv/merges.txt"));
  auto expect_error = [](auto&& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error, wanted: " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { BpeTokenizer::from_strings("{", merges, "v.json"); },
               "v.json is not valid JSON");
  expect_error([&] { BpeTokenizer::from_strings(R"({"a": 0})", "", "v.json"); },
               "no token for byte");
  expect_error([&] { BpeTokenizer::from_strings(vocab, "#version: 0.2\nĠ\n", "v", "m.txt"); },
               "m.txt:2: expected two tokens");
  expect_error([&] { BpeTokenizer::from_strings(vocab, "Ġ €\n", "v", "m.txt"); },
               "m.txt:1: '€' is not a byte-level token");
  expect_error([&] { BpeTokenizer::from_strings(vocab, "x y\n", "v", "m.txt"); },
               "merged token of 'x y' is not in v");
  // Listed twice with two ids: a JSON document would keep the last; the vocabulary would then be
  // one token smaller than its ids say.
  expect_error([&] { BpeTokenizer::from_strings(R"({"a": 0, "b": 1, "a": 2})", "", "v.json"); },
               "v.json: token 'a' appears more than once");
  expect_error([&] { BpeTokenizer::from_strings("[0, 1]", "", "v.json"); },
               "v.json is not a JSON object (got array)");
  expect_error([&] { BpeTokenizer::from_strings(R"({"a": 0.5})", "", "v.json"); },
               "token 'a' has a non-integer id 0.5");
  expect_error(
      [] { BpeTokenizer::from_files("/nonexistent/vocab.json", fixture("bpe_kjv/merges.txt")); },
      "cannot open --vocab-file '/nonexistent/vocab.json'");
}

}  // namespace
}  // namespace zt::data
