#pragma once
// The flags of a subcommand other than `train` (prepare-data, train-tokenizer, import, export, and
// what estimate and simulate add to the training options): a table of FlagSpec per command,
// each flag declared once with its help; unknown flags, missing values and bad numbers are
// InputError (exit 2) naming the command and the flag. The training options have their own
// table (options.inc), which estimate and simulate read too.
#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/error.h"

namespace zt {

struct FlagSpec {
  std::string_view name;   // "--input"
  std::string_view value;  // metavar, empty for a boolean switch
  std::string_view help;
  bool required = false;
  bool many = false;  // takes every following value up to the next --flag (Megatron's nargs='+')
};

class ParsedFlags {
 public:
  // Returns nullopt after printing usage when --help / -h is given.
  static std::optional<ParsedFlags> parse(std::string_view command,
                                          const std::vector<FlagSpec>& specs,
                                          std::span<const std::string_view> args) {
    ParsedFlags p;
    p.command_ = command;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string_view a = args[i];
      if (a == "--help" || a == "-h") {
        fmt::print("usage: zerotron {} [flags]\n\nflags:\n", command);
        for (const auto& s : specs)
          fmt::print("  {:<28} {}{}\n", fmt::format("{} {}", s.name, s.value), s.help,
                     s.required ? " (required)" : "");
        return std::nullopt;
      }
      const FlagSpec* spec = nullptr;
      for (const auto& s : specs)
        if (s.name == a) spec = &s;
      ZT_REQUIRE(spec != nullptr, "{}: unknown flag '{}', run 'zerotron {} --help'", command, a,
                 command);
      if (spec->value.empty()) {
        p.values_[std::string(a)] = {"1"};
        continue;
      }
      ZT_REQUIRE(i + 1 < args.size() && !args[i + 1].starts_with("--"),
                 "{}: flag {} needs a value ({})", command, a, spec->value);
      auto& vals = p.values_[std::string(a)];
      vals.clear();
      do vals.emplace_back(args[++i]);
      while (spec->many && i + 1 < args.size() && !args[i + 1].starts_with("--"));
    }
    for (const auto& s : specs)
      ZT_REQUIRE(!s.required || p.values_.count(std::string(s.name)),
                 "{}: missing required flag {} {}", command, s.name, s.value);
    return p;
  }

  bool has(std::string_view name) const { return values_.count(std::string(name)) != 0; }
  std::string str(std::string_view name, std::string fallback = "") const {
    auto it = values_.find(std::string(name));
    return it == values_.end() ? fallback : it->second.front();
  }
  std::vector<std::string> list(std::string_view name, std::vector<std::string> fallback) const {
    auto it = values_.find(std::string(name));
    return it == values_.end() ? fallback : it->second;
  }
  int64_t integer(std::string_view name, int64_t fallback, int64_t min, int64_t max) const {
    if (!has(name)) return fallback;
    const std::string s = str(name);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    ZT_REQUIRE(ec == std::errc{} && end == s.data() + s.size() && v >= min && v <= max,
               "{}: {} must be an integer in [{}, {}], got '{}'", command_, name, min, max, s);
    return v;
  }

 private:
  std::string command_;
  std::map<std::string, std::vector<std::string>> values_;
};

}  // namespace zt
