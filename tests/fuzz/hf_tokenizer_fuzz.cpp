// libFuzzer target for Hugging Face tokenizer.json files through BpeTokenizer::from_hf_json. A
// file either loads or ends in InputError; a tokenizer that loads encodes any text to ids inside
// its vocabulary, and without template tokens or stripping added tokens, decodes them back to
// the text byte for byte. Input: tokenizer.json, a 0 byte, text. Run by scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/core/error.h"
#include "src/data/bpe_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view json = in.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? "" : in.substr(nul + 1);
  try {
    const auto tok = zt::data::BpeTokenizer::from_hf_json(json, "fuzz/tokenizer.json");
    const auto ids = tok.encode(text);
    for (int32_t id : ids)
      if (id < 0 || id >= tok.vocab_size()) std::abort();
    if (tok.prefix_ids().empty() && tok.suffix_ids().empty() &&
        json.find("strip\": true") == std::string_view::npos && tok.decode(ids) != text)
      std::abort();
  } catch (const zt::InputError&) {
  }
  return 0;
}
