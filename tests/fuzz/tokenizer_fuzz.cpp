// libFuzzer target for the GPT-2 tokenizer files: vocab.json and merges.txt as a user might
// hand them over, through BpeTokenizer::from_strings. A tokenizer that loads must encode any text
// and decode it back byte for byte; files that do not load must end in InputError.
// Input: vocab.json, a 0 byte, merges.txt, a 0 byte, text. Run by scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/core/error.h"
#include "src/data/bpe_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto next = [&] {
    const size_t nul = in.find('\0');
    const std::string_view part = in.substr(0, nul);
    in = nul == std::string_view::npos ? std::string_view{} : in.substr(nul + 1);
    return part;
  };
  const std::string_view vocab = next(), merges = next(), text = next();
  try {
    const auto tok =
        zt::data::BpeTokenizer::from_strings(vocab, merges, "fuzz/vocab.json", "fuzz/merges.txt");
    if (tok.decode(tok.encode(text)) != text) std::abort();  // byte-level BPE is lossless
  } catch (const zt::InputError&) {
  }
  return 0;
}
