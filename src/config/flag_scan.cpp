#include "src/config/flag_scan.h"

#include "src/core/error.h"
#include "src/core/input_file.h"

namespace zt {

FlagScan scan_flags(std::string_view command, std::span<const std::string_view> args,
                    const FlagArityOf& arity_of) {
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
    ZT_REQUIRE(arity.has_value(), "{}: unknown flag --{}, run 'zerotron {} --help'", command,
               excerpt(name), command);
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
