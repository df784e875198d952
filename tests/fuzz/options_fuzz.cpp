// libFuzzer target for the training options: a --config JSON text and a command line, through
// the real parser and validation (src/config/options.cpp). Any input must end in options or in
// InputError (one line, exit 2 in `train`); anything else escaping (zt::Error from an internal
// check, std::out_of_range, a crash, a sanitizer report) is a finding.
// Input: JSON text, a 0 byte, then the flags one per line. Run by scripts/fuzz.sh.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/config/derive.h"
#include "src/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view json = in.substr(0, nul);
  std::vector<std::string> words;
  if (nul != std::string_view::npos) {
    std::string_view rest = in.substr(nul + 1);
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      words.emplace_back(rest.substr(0, nl));
      rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    }
  }
  const std::vector<std::string_view> args(words.begin(), words.end());
  zt::TrainOptions o;
  try {
    if (!zt::parse_train_options(args, o)) return 0;  // --help
    if (!json.empty()) zt::apply_json_config(json, "fuzz.json", o);
    for (int world : {1, 2, 8}) zt::validate_train_options(o, zt::data_parallel_size(o, world));
  } catch (const zt::InputError&) {
  }
  return 0;
}
