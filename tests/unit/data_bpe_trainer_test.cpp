// BPE training: determinism (the committed bpe_kjv files are exactly what the trainer makes from
// the committed corpus), GPT-2 file layout, and that its vocab encodes what it was trained on.
#include <gtest/gtest.h>

#include "src/core/error.h"
#include "src/data/bpe_tokenizer.h"
#include "src/data/bpe_trainer.h"
#include "src/data/document_reader.h"
#include "tests/support/data_testing.h"

namespace zt::data {
namespace {

using testing::fixture;

BpeModel train_fixture_corpus(int32_t vocab_size) {
  // Read as train-tokenizer reads it: one document per blank-line-separated block.
  DocumentReader reader(fixture("bpe_train_corpus.txt"), InputFormat::kText, {"text"});
  BpeTrainer trainer;
  std::vector<std::string> fields;
  while (reader.next(fields)) trainer.add_text(fields[0]);
  return trainer.train(vocab_size);
}

TEST(BpeTrainer, ReproducesCommittedVocabAndMerges) {
  const BpeModel m = train_fixture_corpus(800);
  EXPECT_EQ(vocab_json(m), read_file(fixture("bpe_kjv/vocab.json")));
  EXPECT_EQ(merges_txt(m), read_file(fixture("bpe_kjv/merges.txt")));
}

TEST(BpeTrainer, Gpt2Layout) {
  const BpeModel m = train_fixture_corpus(300);
  ASSERT_EQ(m.tokens.size(), 300u);
  EXPECT_EQ(m.eod, 299);
  EXPECT_EQ(m.tokens[m.eod], "<|endoftext|>");
  EXPECT_EQ(m.merges.size(), 300u - 257u);
  EXPECT_EQ(m.tokens[0], "!");
  const std::string merges = merges_txt(m);
  EXPECT_TRUE(merges.starts_with("#version: 0.2\n"));
  // The most frequent pair of this corpus (as in the whole KJV).
  EXPECT_EQ(merges.substr(14, merges.find('\n', 14) - 14), "t h");
}

TEST(BpeTrainer, SmallerVocabIsAPrefixOfLarger) {
  const BpeModel small = train_fixture_corpus(400), big = train_fixture_corpus(800);
  ASSERT_LE(small.merges.size(), big.merges.size());
  EXPECT_TRUE(std::equal(small.merges.begin(), small.merges.end(), big.merges.begin()));
}

TEST(BpeTrainer, WrittenFilesLoadAndEncodeTrainingWordsWhole) {
  testing::TempDir dir;
  BpeTrainer trainer;
  for (int i = 0; i < 10; ++i) trainer.add_text("low lower lowest newer wider ");
  const BpeModel m = trainer.train(400);
  write_bpe_files(m, dir / "tok");
  const auto tok = BpeTokenizer::from_files(dir / "tok/vocab.json", dir / "tok/merges.txt");
  EXPECT_EQ(tok.vocab_size(), static_cast<int32_t>(m.tokens.size()));
  EXPECT_EQ(tok.eod(), m.eod);
  // Every word was seen 10 times, so each becomes a single token.
  EXPECT_EQ(tok.encode(" lowest").size(), 1u);
  EXPECT_EQ(tok.decode(tok.encode("low lower lowest")), "low lower lowest");
  EXPECT_LT(m.tokens.size(), 400u);  // ran out of pairs with count >= 2
}

TEST(BpeTrainer, RejectsTinyVocab) {
  BpeTrainer t;
  t.add_text("abc");
  EXPECT_THROW(t.train(256), InputError);
}

}  // namespace
}  // namespace zt::data
