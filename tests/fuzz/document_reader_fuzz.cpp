// libFuzzer target for prepare-data's document reader (plain text and JSON lines): the input is
// read with DocumentReader from memory, the same parser the file constructor runs over its
// mapping. It must yield documents or throw InputError, and must consume the whole input.
// Opening the file (regular files only, FIFOs and devices refused) is tested by tests/hostile;
// writing and mapping a file per input cost about a third of each execution here.
// Input: one byte choosing the format (even: text, odd: JSON lines with keys "text" and, when
// bit 1 is set, "title"), then the contents. Run by scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/error.h"
#include "src/data/document_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool json = data[0] & 1;
  std::vector<std::string> keys = {"text"};
  if (data[0] & 2) keys.emplace_back("title");
  const std::string_view contents(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    zt::data::DocumentReader reader(
        contents, "fuzz/input",
        json ? zt::data::InputFormat::kJsonLines : zt::data::InputFormat::kText, keys);
    std::vector<std::string> fields;
    while (reader.next(fields)) {
      if (fields.size() != (json ? keys.size() : 1)) std::abort();
      if (!json && fields[0].empty()) std::abort();  // empty text documents are skipped
    }
    if (reader.bytes_read() != reader.bytes_total()) std::abort();
  } catch (const zt::InputError&) {
  }
  return 0;
}
