// libFuzzer target for prepare-data's document reader (plain text and JSON lines), through the
// real file path: the input is written to a file and read back with DocumentReader, which must
// yield documents or throw InputError, and must consume the whole file.
// Input: one byte choosing the format (even: text, odd: JSON lines with keys "text" and, when
// bit 1 is set, "title"), then the file. Run by scripts/fuzz.sh.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/core/error.h"
#include "src/data/document_reader.h"

namespace {

// Memory-backed when /dev/shm is there: a disk-backed file costs ~10x the executions per second.
std::string path() {
  static const std::string p = [] {
    const char* dir = std::getenv("TMPDIR");
    const std::string base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : dir ? dir : "/tmp";
    return base + "/zt_document_reader_fuzz." + std::to_string(::getpid());
  }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool json = data[0] & 1;
  std::vector<std::string> keys = {"text"};
  if (data[0] & 2) keys.emplace_back("title");
  {
    std::FILE* f = std::fopen(path().c_str(), "wb");
    if (f == nullptr) std::abort();
    if (size > 1 && std::fwrite(data + 1, 1, size - 1, f) != size - 1) std::abort();
    std::fclose(f);
  }
  try {
    zt::data::DocumentReader reader(
        path(), json ? zt::data::InputFormat::kJsonLines : zt::data::InputFormat::kText, keys);
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
