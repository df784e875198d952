#include "src/config/flag_scan.h"

#include <fmt/format.h>

#include <algorithm>

#include "src/core/error.h"
#include "src/core/input_file.h"

namespace zt {
namespace {

// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a substring).
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::string_view nearest_flag(std::string_view name, const std::vector<std::string_view>& known) {
  // Names come from the command line: a long one is no typo of a flag, and the table is O(n m).
  if (name.empty() || name.size() > 64) return {};
  const size_t limit = name.size() <= 4 ? 1 : name.size() <= 8 ? 2 : 3;
  std::string_view best;
  size_t best_distance = limit + 1;
  for (const std::string_view k : known) {
    const size_t d = edit_distance(name, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

FlagScan scan_flags(std::string_view command, std::span<const std::string_view> args,
                    const FlagArityOf& arity_of, const std::vector<std::string_view>& known) {
  FlagScan scan;
  for (const std::string_view a : args)
    if (a == "--help" || a == "-h") {
      scan.help = true;
      return scan;
    }
  auto is_flag = [](std::string_view a) { return a.starts_with("--"); };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    ZT_REQUIRE(is_flag(a) && a.size() > 2, "{}: unexpected argument '{}'", command, excerpt(a));
    std::string_view name = a.substr(2);
    std::optional<std::string_view> inline_value;
    if (const size_t eq = name.find('='); eq != std::string_view::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const std::optional<FlagArity> arity = arity_of(name);
    if (!arity) {
      const std::string_view near = nearest_flag(name, known);
      throw InputError(
          fmt::format("{}: unknown flag --{}{}, run 'zerotron {} --help'", command, excerpt(name),
                      near.empty() ? "" : fmt::format(" (did you mean --{}?)", near), command));
    }
    ScannedFlag& f = scan.flags.emplace_back(ScannedFlag{std::string(name), {}});
    if (*arity == FlagArity::Switch) {
      const std::string_view v = inline_value.value_or("true");
      ZT_REQUIRE(v == "true" || v == "false" || v == "1" || v == "0",
                 "{}: --{} expects true or false, got '{}'", command, name, excerpt(v));
      f.values.emplace_back(v == "true" || v == "1" ? "true" : "false");
      continue;
    }
    if (inline_value) {
      f.values.emplace_back(*inline_value);
      continue;
    }
    while (i + 1 < args.size() && !is_flag(args[i + 1])) {
      f.values.emplace_back(args[++i]);
      if (*arity == FlagArity::Value) break;
    }
    ZT_REQUIRE(!f.values.empty(), "{}: --{} needs a value", command, name);
  }
  return scan;
}

}  // namespace zt
