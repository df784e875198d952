#include "src/config/command_flags.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "src/core/error.h"

namespace zt {

FlagArity arity_of(const FlagSpec& spec) {
  if (spec.value.empty()) return FlagArity::Switch;
  return spec.many ? FlagArity::Words : FlagArity::Value;
}

const FlagSpec* find_spec(const std::vector<FlagSpec>& specs, std::string_view name) {
  for (const auto& s : specs)
    if (s.name.substr(2) == name) return &s;
  return nullptr;
}

FlagArityOf arity_of(const std::vector<FlagSpec>& specs) {
  return [&specs](std::string_view name) {
    const FlagSpec* s = find_spec(specs, name);
    return s == nullptr ? std::nullopt : std::optional<FlagArity>(arity_of(*s));
  };
}

std::vector<std::string_view> flag_names(const std::vector<FlagSpec>& specs) {
  std::vector<std::string_view> names;
  for (const auto& s : specs) names.push_back(s.name.substr(2));
  return names;
}

void print_usage(std::string_view command, const std::vector<FlagSpec>& specs) {
  fmt::print("usage: zerotron {} [flags]\n\nflags:\n", command);
  for (const auto& s : specs)
    fmt::print("  {:<28} {}{}\n", fmt::format("{} {}", s.name, s.value), s.help,
               s.required ? " (required)" : "");
}

std::optional<ParsedFlags> ParsedFlags::parse(std::string_view command,
                                              const std::vector<FlagSpec>& specs,
                                              std::span<const std::string_view> args) {
  const FlagScan scan = scan_flags(command, args, arity_of(specs), flag_names(specs));
  if (scan.help) {
    print_usage(command, specs);
    return std::nullopt;
  }
  return from_scanned(command, specs, scan.flags);
}

ParsedFlags ParsedFlags::from_scanned(std::string_view command, const std::vector<FlagSpec>& specs,
                                      const std::vector<ScannedFlag>& scanned) {
  ParsedFlags p;
  p.command_ = command;
  for (const ScannedFlag& f : scanned) {
    const FlagSpec* s = find_spec(specs, f.name);
    if (s == nullptr) continue;  // another table's flag
    const std::string key(s->name);
    if (arity_of(*s) == FlagArity::Switch && f.values.front() == "false")
      p.values_.erase(key);
    else
      p.values_[key] = f.values;  // the last occurrence wins, as for the training options
  }
  for (const auto& s : specs)
    ZT_REQUIRE(!s.required || p.has(s.name), "{}: missing required flag {} {}", command, s.name,
               s.value);
  return p;
}

std::string ParsedFlags::str(std::string_view name, std::string fallback) const {
  auto it = values_.find(std::string(name));
  return it == values_.end() ? fallback : it->second.front();
}

std::vector<std::string> ParsedFlags::list(std::string_view name,
                                           std::vector<std::string> fallback) const {
  auto it = values_.find(std::string(name));
  return it == values_.end() ? fallback : it->second;
}

int64_t ParsedFlags::integer(std::string_view name, int64_t fallback, int64_t min,
                             int64_t max) const {
  if (!has(name)) return fallback;
  const std::string s = str(name);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  ZT_REQUIRE(ec == std::errc{} && end == s.data() + s.size() && v >= min && v <= max,
             "{}: {} must be an integer in [{}, {}], got '{}'", command_, name, min, max, s);
  return v;
}

std::optional<int64_t> checkpoint_step_flag(const ParsedFlags& f) {
  ZT_REQUIRE(!(f.has("--ckpt-step") && f.has("--iteration")),
             "--ckpt-step and --iteration name the same thing: give one");
  for (const std::string_view flag : {"--ckpt-step", "--iteration"})
    if (f.has(flag)) return f.integer(flag, 0, 0, int64_t{1} << 40);
  return std::nullopt;
}

double ParsedFlags::real(std::string_view name, double fallback, double min, double max) const {
  if (!has(name)) return fallback;
  const std::string s = str(name);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  ZT_REQUIRE(
      ec == std::errc{} && end == s.data() + s.size() && std::isfinite(v) && v >= min && v <= max,
      "{}: {} must be a number in [{}, {}], got '{}'", command_, name, min, max, s);
  return v;
}

}  // namespace zt
