// libFuzzer target for the --data-path blend and --split parsers (src/data): any text must give
// a valid blend (1-255 datasets, positive weights summing to 1) and valid split ranges (three,
// ordered, covering [0, n)), or InputError.
// Input: 4 bytes of document count n, then --split text, a 0 byte, --data-path text.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "src/core/error.h"
#include "src/data/blended_dataset.h"
#include "src/data/gpt_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t n = 0;
  std::memcpy(&n, data, 4);
  const std::string_view in(reinterpret_cast<const char*>(data) + 4, size - 4);
  const size_t nul = in.find('\0');
  const std::string split(in.substr(0, nul));
  const std::string_view words = nul == std::string_view::npos ? "" : in.substr(nul + 1);
  try {
    const auto ranges = zt::data::split_documents(split, n);
    if (ranges.size() != 3 || ranges[0].first != 0 || ranges[2].second != n) std::abort();
    for (size_t i = 0; i < 3; ++i) {
      if (ranges[i].first > ranges[i].second) std::abort();
      if (i > 0 && ranges[i].first != ranges[i - 1].second) std::abort();
    }
  } catch (const zt::InputError&) {
  }
  try {
    const auto blend = zt::data::parse_data_path(words);
    if (blend.prefixes.empty() || blend.prefixes.size() > zt::data::kMaxBlendDatasets ||
        blend.prefixes.size() != blend.weights.size())
      std::abort();
    double sum = 0;
    for (double w : blend.weights) {
      if (!(w > 0) || !std::isfinite(w)) std::abort();
      sum += w;
    }
    if (std::abs(sum - 1) > 1e-9) std::abort();
  } catch (const zt::InputError&) {
  }
  return 0;
}
