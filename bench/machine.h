#pragma once
// The machine a benchmark ran on, for its JSON (timings are only comparable on one machine).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zt::bench {

// The CPU as /proc/cpuinfo names it: model name, family and model numbers (a virtual machine
// may show only a vendor name), and which bf16 instructions it reports.
inline nlohmann::json cpu_info() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name, family, model, flags;
  const auto value = [](const std::string& l) {
    const auto colon = l.find(':');
    return colon == std::string::npos || colon + 2 > l.size() ? std::string() : l.substr(colon + 2);
  };
  while (std::getline(in, line)) {
    if (name.empty() && line.rfind("model name", 0) == 0) name = value(line);
    if (family.empty() && line.rfind("cpu family", 0) == 0) family = value(line);
    if (model.empty() && line.rfind("model\t", 0) == 0) model = value(line);
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = value(line);
    if (!name.empty() && !family.empty() && !model.empty() && !flags.empty()) break;
  }
  std::vector<std::string> bf16;
  std::istringstream words(flags);
  for (std::string w; words >> w;)
    if (w == "avx512_bf16" || w == "amx_bf16") bf16.push_back(w);
  return {{"model_name", name}, {"family", family}, {"model", model}, {"bf16_flags", bf16}};
}

}  // namespace zt::bench
