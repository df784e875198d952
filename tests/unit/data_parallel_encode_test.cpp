// Encoding across threads gives exactly the serial ids, in document order, and appends the
// end-of-document token to non-empty documents only (as Megatron's preprocess_data.py does).
#include <gtest/gtest.h>

#include "src/data/bpe_tokenizer.h"
#include "src/data/file_util.h"
#include "src/data/parallel_encode.h"
#include "tests/support/data_testing.h"

namespace zt::data {
namespace {

TEST(ParallelEncoder, MatchesSerialAndAppendsEod) {
  using testing::fixture;
  const auto tok =
      BpeTokenizer::from_files(fixture("bpe_kjv/vocab.json"), fixture("bpe_kjv/merges.txt"));
  const std::string corpus = read_file(fixture("bpe_train_corpus.txt"));
  std::vector<std::string> docs;
  for (size_t pos = 0; pos < corpus.size(); pos += 97) docs.push_back(corpus.substr(pos, 97));
  docs.insert(docs.begin() + 3, "");
  for (int workers : {1, 2, 5}) {
    ParallelEncoder enc(tok, workers, /*append_eod=*/true);
    std::vector<std::vector<int32_t>> out;
    enc.encode(docs, out);
    ASSERT_EQ(out.size(), docs.size());
    for (size_t i = 0; i < docs.size(); ++i) {
      auto want = tok.encode(docs[i]);
      if (!want.empty()) want.push_back(*tok.eod());
      ASSERT_EQ(out[i], want) << "workers " << workers << " doc " << i;
    }
  }
}

}  // namespace
}  // namespace zt::data
