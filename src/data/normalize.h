#pragma once
// Unicode NFC as Hugging Face `tokenizers` applies it (the NFC normalizer of GPT-NeoX's and
// Qwen2's tokenizer.json), with that package's own tables (scripts/gen_unicode_nfc.py). Most text
// is NFC already: nfc_is_identity() finds that without copying. Invalid UTF-8 bytes, which
// `tokenizers` never sees, pass through unchanged and block composition across them.
#include <string>
#include <string_view>

namespace zt::data {

// True when nfc(text) == text is certain from the code points alone (none can change).
bool nfc_is_identity(std::string_view text);
// Appends NFC(text) to `out`.
void nfc(std::string_view text, std::string& out);

}  // namespace zt::data
