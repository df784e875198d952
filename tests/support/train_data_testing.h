#pragma once
// A tiny real dataset for the training-data tests (unit and dist): the committed fixture corpus
// (KJV Genesis 1-3 and a few multilingual lines), one document per non-empty line, tokenized
// with the committed 800-id tokenizer, each document ending with <|endoftext|>.
#include <fstream>
#include <string>

#include "src/data/bpe_tokenizer.h"
#include "src/data/indexed_dataset_builder.h"
#include "tests/support/data_testing.h"

namespace zt::data::testing {

inline std::string fixture_vocab() {
  return fixture("bpe_kjv/vocab.json");
}
inline std::string fixture_merges() {
  return fixture("bpe_kjv/merges.txt");
}

// Writes <dir>/<name>_text_document.{bin,idx}; returns that prefix.
inline std::string make_fixture_dataset(const std::string& dir, const std::string& name = "kjv") {
  const auto tok = BpeTokenizer::from_files(fixture_vocab(), fixture_merges());
  const std::string prefix = dir + "/" + name + "_text_document";
  IndexedDatasetBuilder b(prefix, DType::kUInt16);
  std::ifstream in(fixture("bpe_train_corpus.txt"));
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto ids = tok.encode(line);
    ids.push_back(*tok.eod());
    b.add_document(ids);
  }
  b.finalize();
  return prefix;
}

}  // namespace zt::data::testing
