// libFuzzer target for the Megatron .idx parser: any input must either parse into tables that
// satisfy the reader's invariants or throw zt::InputError; a crash, a sanitizer report, another
// exception type or a broken invariant is a bug.
//
// Build and run (clang only; the fuzz build compiles just this target):
//   CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DZT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   ninja -C build-fuzz idx_fuzz
//   mkdir -p /tmp/idx_corpus && cp tests/fixtures/megatron/*.idx /tmp/idx_corpus/
//   build-fuzz/bin/idx_fuzz -max_total_time=60 /tmp/idx_corpus
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "src/core/error.h"
#include "src/data/index_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const zt::data::IndexTables t = zt::data::parse_index(bytes, "fuzz.idx");
    // What the reader relies on after a successful parse.
    if (t.pointers.size() != t.sizes.size() || t.doc_idx.empty() || t.doc_idx.front() != 0 ||
        t.doc_idx.back() != static_cast<int64_t>(t.sizes.size()))
      std::abort();
    if (zt::data::serialize_index(t).size() != size) std::abort();  // parse is exact
    // The .bin check must not overflow for any claimed size either.
    zt::data::check_against_bin(t, size * 7, "fuzz.bin");
  } catch (const zt::InputError&) {
  }
  return 0;
}
