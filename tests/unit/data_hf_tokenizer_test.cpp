// The split rules of the byte-level BPE families on hand-written cases (each expectation is what
// the family's regex under Hugging Face `tokenizers` gives; tests/reference/check_hf_tokenizers.py
// compares whole tokenizers against that package live), and tokenizer.json reading: the
// settings reproduced and the refusals, each naming the key.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "src/core/error.h"
#include "src/data/bpe_tokenizer.h"
#include "src/data/byte_unicode.h"
#include "src/data/pretokenize.h"

namespace zt::data {
namespace {

using V = std::vector<std::string_view>;
using nlohmann::json;

TEST(SplitLlama3, ContractionsAreCaseInsensitive) {
  const auto r = SplitRule::kLlama3;
  EXPECT_EQ(pretokenize("don't DON'T", r), (V{"don", "'t", " DON", "'T"}));
  EXPECT_EQ(pretokenize("we'LL they'Re I'M", r), (V{"we", "'LL", " they", "'Re", " I", "'M"}));
  EXPECT_EQ(pretokenize("'Sup", r), (V{"'S", "up"}));
  EXPECT_EQ(pretokenize("'\u017fx", r), (V{"'\u017f", "x"}));  // U+017F folds to 's'
  EXPECT_EQ(pretokenize("'hello", r), (V{"'hello"}));          // else ' prefixes the word
  EXPECT_EQ(pretokenize("DON'T", SplitRule::kGpt2), (V{"DON", "'", "T"}));
}

TEST(SplitLlama3, NumbersInThrees) {
  EXPECT_EQ(pretokenize("1234567 x12", SplitRule::kLlama3), (V{"123", "456", "7", " x", "12"}));
  EXPECT_EQ(pretokenize("1234 5", SplitRule::kQwen2), (V{"1", "2", "3", "4", " ", "5"}));
  EXPECT_EQ(pretokenize(" 123abc", SplitRule::kLlama3), (V{" ", "123", "abc"}));
  EXPECT_EQ(pretokenize(" 123abc", SplitRule::kGpt2), (V{" 123", "abc"}));
}

TEST(SplitLlama3, PunctuationPrefixesWordsAndTakesNewlines) {
  const auto r = SplitRule::kLlama3;
  EXPECT_EQ(pretokenize("(hello) world", r), (V{"(hello", ")", " world"}));
  EXPECT_EQ(pretokenize("end.\n\nNext", r), (V{"end", ".\n\n", "Next"}));
  EXPECT_EQ(pretokenize("a !!!\r\n  b", r), (V{"a", " !!!\r\n", " ", " b"}));
  EXPECT_EQ(pretokenize("\tindent", r), (V{"\tindent"}));  // any non-newline space prefixes
}

TEST(SplitLlama3, Whitespace) {
  const auto r = SplitRule::kLlama3;
  EXPECT_EQ(pretokenize("a  b", r), (V{"a", " ", " b"}));                // \s+(?!\S)
  EXPECT_EQ(pretokenize("a \n\n  b", r), (V{"a", " \n\n", " ", " b"}));  // \s*[\r\n]+
  EXPECT_EQ(pretokenize("a\n b", r), (V{"a", "\n", " b"}));
  EXPECT_EQ(pretokenize("x   ", r), (V{"x", "   "}));
  EXPECT_EQ(pretokenize("x \n ", r), (V{"x", " \n", " "}));
  EXPECT_EQ(pretokenize(" 1", r), (V{" ", "1"}));
}

TEST(SplitDigits, IndividualAndRuns) {
  EXPECT_EQ(pretokenize("ab12 3", SplitRule::kDigits), (V{"ab", "1", "2", " ", "3"}));
  EXPECT_EQ(pretokenize("ab12 3", SplitRule::kDigitRuns), (V{"ab", "12", " ", "3"}));
}

TEST(SplitRules, InvalidUtf8IsCovered) {
  const std::string bad = "ok \xFF\xFE x\xC3 1\xE2\x82";
  for (auto r : {SplitRule::kGpt2, SplitRule::kLlama3, SplitRule::kQwen2, SplitRule::kDigits}) {
    std::string joined;
    for (auto p : pretokenize(bad, r)) joined += p;
    EXPECT_EQ(joined, bad);
  }
}

// A minimal byte-level BPE tokenizer.json: the 256 bytes, "h e" -> "he", "he y" -> "hey".
json base_json() {
  json vocab = json::object();
  for (int i = 0; i < 256; ++i)
    vocab[bytes_to_vocab_string(std::string(1, static_cast<char>(byte_order()[i])))] = i;
  vocab["he"] = 256;
  vocab["hey"] = 257;
  vocab["\xC4\xA0hey"] = 258;  // "Ġhey": no merge reaches it
  return json{
      {"version", "1.0"},
      {"added_tokens", json::array({{{"id", 259},
                                     {"content", "<|endoftext|>"},
                                     {"special", true},
                                     {"normalized", false}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", json::array({"h e", json::array({"he", "y"})})}}}};
}

BpeTokenizer load(const json& j) {
  return BpeTokenizer::from_hf_json(j.dump(), "t.json");
}

int32_t byte(char c) {
  for (int i = 0; i < 256; ++i)
    if (byte_order()[i] == static_cast<uint8_t>(c)) return i;
  return -1;
}

TEST(HfTokenizer, BothMergeFormsAddedTokensAndEod) {
  const auto t = load(base_json());
  EXPECT_EQ(t.vocab_size(), 260);
  EXPECT_EQ(t.eod(), 259);
  using I = std::vector<int32_t>;
  EXPECT_EQ(t.encode("hey"), (I{257}));
  EXPECT_EQ(t.encode("hey<|endoftext|> hey"), (I{257, 259, byte(' '), 257}));
  EXPECT_EQ(t.decode(t.encode("a<|endoftext|>b")), "a<|endoftext|>b");
}

TEST(HfTokenizer, IgnoreMergesTakesWholeVocabWords) {
  auto j = base_json();
  using I = std::vector<int32_t>;
  EXPECT_EQ(load(j).encode(" hey"), (I{byte(' '), 257}));
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(load(j).encode(" hey"), (I{258}));
}

TEST(HfTokenizer, TemplateAndPrefixSpace) {
  auto j = base_json();
  j["pre_tokenizer"]["add_prefix_space"] = true;
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<|endoftext|>"}}}},
                                                 {{"Sequence", {{"id", "A"}}}}})},
                         {"special_tokens", {{"<|endoftext|>", {{"ids", json::array({259})}}}}}};
  const auto t = load(j);
  EXPECT_EQ(t.prefix_ids(), (std::vector<int32_t>{259}));
  EXPECT_EQ(t.encode("hey"), (std::vector<int32_t>{259, byte(' '), 257}));
  EXPECT_EQ(t.encode(""), (std::vector<int32_t>{259}));
}

TEST(HfTokenizer, Nfc) {
  auto j = base_json();
  j["normalizer"] = {{"type", "NFC"}};
  const auto t = load(j);
  // e + U+0301 composes to U+00E9 (bytes C3 A9); U+212B (Angstrom sign) is U+00C5.
  EXPECT_EQ(t.encode("e\u0301"), (std::vector<int32_t>{byte('\xC3'), byte('\xA9')}));
  EXPECT_EQ(t.decode(t.encode("\u212B")), "\u00C5");
  EXPECT_EQ(t.decode(t.encode("a\u0301\u0316")), "\u00E1\u0316");  // reordered, then composed
  EXPECT_EQ(t.decode(t.encode("\u1100\u1161\u11A8")), "\uAC01");   // Hangul L V T
  EXPECT_EQ(t.decode(t.encode("\xFF\u0301")), "\xFF\u0301");       // a bad byte blocks
  EXPECT_EQ(t.decode(t.encode("<|endoftext|>e\u0301")), "<|endoftext|>\u00E9");
}

TEST(HfTokenizer, LstripRstrip) {
  auto j = base_json();
  j["added_tokens"].push_back(
      {{"id", 260}, {"content", "<m>"}, {"special", true}, {"lstrip", true}, {"rstrip", true}});
  const auto t = load(j);
  EXPECT_EQ(t.encode("hey  <m>  hey"), (std::vector<int32_t>{257, 260, 257}));
}

void expect_refusal(const json& j, const std::string& needle) {
  try {
    load(j);
    ADD_FAILURE() << "loaded; wanted a refusal with: " << needle;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(HfTokenizer, RefusesOtherKindsNamingTheKey) {
  auto j = base_json();
  j["model"] = {{"type", "Unigram"}, {"vocab", json::array()}};
  expect_refusal(j, "model.type 'Unigram' is not supported");
  j["model"] = {{"type", "WordPiece"}, {"vocab", json::object()}};
  expect_refusal(j, "model.type 'WordPiece' is not supported");
  j = base_json();
  j["normalizer"] = {{"type", "NFKC"}};
  expect_refusal(j, "normalizer.type 'NFKC' is not supported");
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", json::array({{{"type", "NFC"}}, {{"type", "Lowercase"}}})}};
  expect_refusal(j, "normalizer.normalizers[1].type 'Lowercase' is not supported");
  j = base_json();
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}};
  expect_refusal(j, "pre_tokenizer.type 'Metaspace' is not supported");
  j = base_json();
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers", json::array({{{"type", "Split"},
                                      {"pattern", {{"Regex", "\\w+|\\s+"}}},
                                      {"behavior", "Isolated"},
                                      {"invert", false}},
                                     {{"type", "ByteLevel"}, {"use_regex", false}}})}};
  expect_refusal(j, "pre_tokenizer.pretokenizers[0].pattern.Regex '\\w+|\\s+' is not supported");
  j["pre_tokenizer"]["pretokenizers"].erase(1);
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] =
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  expect_refusal(j, "pre_tokenizer has no ByteLevel step");
  j = base_json();
  j["decoder"] = {{"type", "Metaspace"}};
  expect_refusal(j, "decoder.type 'Metaspace' is not supported");
  j = base_json();
  j["model"]["continuing_subword_prefix"] = "##";
  expect_refusal(j, "model.continuing_subword_prefix");
  j = base_json();
  j["added_tokens"][0]["single_word"] = true;
  expect_refusal(j, "added_tokens[0].single_word 'true' is not supported");
  j = base_json();
  j["post_processor"] = {{"type", "RobertaProcessing"}};
  expect_refusal(j, "post_processor.type 'RobertaProcessing' is not supported");
}

TEST(HfTokenizer, RefusesMalformedFiles) {
  expect_refusal(json::array(), "expected a tokenizer.json object");
  auto j = base_json();
  j["model"]["vocab"]["x"] = "1";
  expect_refusal(j, "model.vocab['x'] must be an integer id");
  j = base_json();
  j["model"]["merges"] = 3;
  expect_refusal(j, "model.merges must be a JSON array");
  j = base_json();
  j["model"]["merges"].push_back(json::array({"h"}));
  expect_refusal(j, "model.merges[2] must be");
  j = base_json();
  j["model"]["merges"].push_back("h e");
  expect_refusal(j, "model.merges[2] repeats the pair");
  j = base_json();
  j["model"]["vocab"].erase("a");
  expect_refusal(j, "no token for byte 0x61");
  j = base_json();
  j["added_tokens"][0]["id"] = 300;
  expect_refusal(j, "has id 300, outside");
  j = base_json();
  j["added_tokens"][0]["id"] = 260;
  j["added_tokens"].push_back({{"id", 5}, {"content", "<x>"}});  // shares a model token's id
  expect_refusal(j, "no token has id 259");
  j = base_json();
  j["model"]["vocab"]["\xE2\x82\xAC"] = 260;  // '€' spells no byte
  expect_refusal(j, "is not a byte-level spelling");
  j = base_json();
  j["added_tokens"][0] = 5;
  expect_refusal(j, "added_tokens[0] must be a JSON object");
  j = base_json();
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<s>"}}}}})},
                         {"special_tokens", json::object()}};
  expect_refusal(j, "names '<s>', which post_processor.special_tokens does not define");
}

}  // namespace
}  // namespace zt::data
