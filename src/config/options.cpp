#include "src/config/options.h"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <variant>
#include <vector>

#include "src/config/deepspeed.h"
#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/core/json_input.h"
#include "src/core/log.h"

namespace zt {
namespace {

using O = TrainOptions;

// The smallest --comm-timeout accepted, seconds (failure-handling.md says why).
constexpr double kMinCommTimeoutS = 1.0;
using Field = std::variant<int O::*, int64_t O::*, double O::*, bool O::*, std::string O::*>;

// Size: a non-negative byte count, plain or with a unit (parse_size).
enum class Check : uint8_t { Any, Positive, NonNegative, Probability, Choice, Size };

struct Decl {
  std::string_view flag;  // without the leading "--"
  std::string_view json;  // key in the JSON config (dots for nesting)
  Field field;
  Check check;
  std::string_view help;
  std::string_view choices = {};  // "a|b|c" for Check::Choice
  // Takes every following word up to the next flag (Megatron's nargs='*'), joined by spaces.
  bool words = false;
};

// The table of every training option, one entry per row of options.inc.
const std::vector<Decl>& decls() {
  static const std::vector<Decl> d = {
#define ZT_OPTION(type, field, def, flag, json, check, help, choices, words) \
  {flag, json, &O::field, Check::check, help, choices, words},
#include "src/config/options.inc"
#undef ZT_OPTION
  };
  return d;
}

// Every flag name, without "--", in table order: what "did you mean" searches.
const std::vector<std::string_view>& train_flag_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> n;
    for (const auto& d : decls()) n.push_back(d.flag);
    return n;
  }();
  return names;
}

const Decl* find_flag(std::string_view name) {
  for (const auto& d : decls())
    if (d.flag == name) return &d;
  return nullptr;
}

bool is_bool(const Decl& d) {
  return std::holds_alternative<bool O::*>(d.field);
}

double parse_number(const Decl& d, std::string_view text) {
  const std::string s(text);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  ZT_REQUIRE(used == s.size() && !s.empty() && std::isfinite(v), "--{} expects a number, got '{}'",
             d.flag, excerpt(text));
  return v;
}

void check_value(const Decl& d, double v) {
  switch (d.check) {
    case Check::Positive:
      ZT_REQUIRE(v > 0, "--{} must be positive, got {}", d.flag, v);
      break;
    case Check::NonNegative:
      ZT_REQUIRE(v >= 0, "--{} must not be negative, got {}", d.flag, v);
      break;
    case Check::Probability:
      ZT_REQUIRE(v >= 0 && v < 1, "--{} must be in [0, 1), got {}", d.flag, v);
      break;
    default:
      break;
  }
}

void set_from_text(const Decl& d, std::string_view text, O& o) {
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(o.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (d.check == Check::Choice) {
            bool ok = false;
            std::string_view rest = d.choices;
            while (!rest.empty()) {
              const size_t bar = rest.find('|');
              ok |= rest.substr(0, bar) == text;
              rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
            }
            ZT_REQUIRE(ok, "--{} must be one of {}, got '{}'", d.flag, d.choices, excerpt(text));
          }
          o.*member = std::string(text);
        } else if constexpr (std::is_same_v<T, bool>) {
          ZT_REQUIRE(text == "true" || text == "false" || text == "1" || text == "0",
                     "--{} expects true or false, got '{}'", d.flag, excerpt(text));
          o.*member = text == "true" || text == "1";
        } else {
          const double v =
              d.check == Check::Size ? parse_size(text, d.flag) : parse_number(d, text);
          if constexpr (!std::is_same_v<T, double>)
            ZT_REQUIRE(v == std::floor(v) && std::abs(v) < 9.2e18,
                       "--{} expects an integer, got '{}'", d.flag, excerpt(text));
          if constexpr (std::is_same_v<T, int>)
            ZT_REQUIRE(std::abs(v) < 2147483648.0, "--{} is out of range: {}", d.flag,
                       excerpt(text));
          check_value(d, v);
          o.*member = static_cast<T>(v);
        }
      },
      d.field);
}

void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::pair<std::string, nlohmann::json>>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object())
      flatten(*it, key, out);
    else
      out.emplace_back(key, *it);
  }
}

// The JSON value of an option as the text its flag would take, refusing a value of the wrong
// JSON type (a string for a number, 1 for a boolean, an array for a scalar): a config whose
// types are off is more likely a mistake than a request.
std::string json_option_text(const Decl& d, const nlohmann::json& v, std::string_view where) {
  auto wrong = [&](std::string_view want) {
    return InputError(fmt::format("{}: key '{}' must be {}, got {} {}", where, d.json, want,
                                  json_type_name(v), json_excerpt(v)));
  };
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::remove_reference_t<decltype(std::declval<O&>().*member)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (!v.is_boolean()) throw wrong("true or false");
          return v.get<bool>() ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (v.is_string()) return v.get<std::string>();
          if (!d.words || !v.is_array()) throw wrong("a string");
          std::string text;  // "data_path": ["0.7", "a", "0.3", "b"]
          for (const auto& w : v) {
            if (!w.is_string() && !w.is_number()) throw wrong("an array of strings and numbers");
            if (!text.empty()) text += ' ';
            text += w.is_string() ? w.get<std::string>() : w.dump();
          }
          return text;
        } else {
          if (d.check == Check::Size && v.is_string()) return v.get<std::string>();  // "32GiB"
          if (!v.is_number()) throw wrong(std::is_same_v<T, double> ? "a number" : "an integer");
          return v.dump();
        }
      },
      d.field);
}

void read_json_config(const std::string& path, O& o, ConfigDialect dialect,
                      std::vector<std::string>* set_flags) {
  // A DeepSpeed config is a few kilobytes; a megabyte leaves room and bounds what is read.
  const char* flag = dialect == ConfigDialect::DeepSpeed ? "--deepspeed-config" : "--config";
  apply_json_config(read_input_file(path, 1 << 20, fmt::format("{} file", flag)),
                    fmt::format("{} file '{}'", flag, excerpt(path, 200)), o, dialect, set_flags);
}

}  // namespace

std::vector<std::string> apply_json_config(std::string_view text, std::string_view where, O& o,
                                           ConfigDialect dialect,
                                           std::vector<std::string>* set_flags) {
  const nlohmann::json j =
      parse_json_input(text, where, JsonLimits{.max_depth = 8, .max_string = 4096});
  ZT_REQUIRE(j.is_object(), "{} must hold a JSON object, got {}", where, json_type_name(j));
  std::vector<std::pair<std::string, nlohmann::json>> items;
  flatten(j, "", items);
  DeepSpeedKeys ds(dialect, std::string(where), [&](std::string_view flag, const std::string& v) {
    const Decl* d = find_flag(flag);
    ZT_CHECK(d != nullptr, "no option --{}", flag);
    set_from_text(*d, v, o);
    if (set_flags != nullptr) set_flags->emplace_back(flag);
  });
  for (const auto& [key, value] : items) {
    if (ds.take(key, value)) continue;
    const Decl* d = nullptr;
    for (const auto& cand : decls())
      if (!cand.json.empty() && cand.json == key) d = &cand;
    if (d == nullptr) {
      ds.unknown(key);
      continue;
    }
    set_from_text(*d, json_option_text(*d, value, where), o);
    if (set_flags != nullptr) set_flags->emplace_back(d->flag);
    ds.given(key);
  }
  ds.finish(o);
  for (const std::string& line : ds.warnings()) log::line(line);
  return ds.warnings();
}

double parse_size(std::string_view text, std::string_view flag) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
      {"B", 1.0}};
  std::string number(text);
  double scale = 1;
  for (const auto& [unit, mult] : kUnits)
    if (text.size() > unit.size() && text.ends_with(unit)) {
      number.resize(text.size() - unit.size());
      scale = mult;
      break;
    }
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const double bytes = v * scale;
  ZT_REQUIRE(used == number.size() && !number.empty() &&
                 std::isdigit(static_cast<unsigned char>(number[0])) && std::isfinite(bytes) &&
                 bytes >= 0 && bytes < 1e18,
             "--{} expects a size in bytes, plain or with a unit (32GiB, 32GB, 512MiB), got '{}'",
             flag, excerpt(text));
  return bytes;
}

namespace {

// An option's default as --help and docs/options.md show it ("" for an empty text).
std::string default_text(const Decl& d) {
  static const O defaults{};
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::remove_reference_t<decltype(defaults.*member)>;
        if constexpr (std::is_same_v<T, bool>)
          return defaults.*member ? "true" : "false";
        else
          return fmt::format("{}", defaults.*member);
      },
      d.field);
}

}  // namespace

std::string train_options_help(std::string_view command,
                               const std::vector<std::string_view>& only) {
  std::string s = fmt::format(
      "usage: zerotron {} [flags]\n\nflags (default in parentheses, JSON key in brackets):\n",
      command);
  for (const auto& d : decls()) {
    if (!only.empty() && std::find(only.begin(), only.end(), d.flag) == only.end()) continue;
    std::string name = "--" + std::string(d.flag);
    if (!is_bool(d)) name += d.words ? " X..." : " X";
    s += fmt::format("  {:<34} {}", name, d.help);
    if (!d.choices.empty()) s += fmt::format(" ({})", d.choices);
    if (const std::string def = default_text(d); !def.empty())
      s += fmt::format(" (default {})", def);
    if (!d.json.empty()) s += fmt::format(" [{}]", d.json);
    s += "\n";
  }
  return s;
}

std::string train_options_markdown() {
  std::string s =
      "# Training options\n\n"
      "Generated from src/config/options.inc by `zerotron train --help-markdown`; do not edit.\n"
      "Each option is a flag of `zerotron train` (also read by `estimate` and `simulate`) and,\n"
      "where a key is given, a key of the JSON file `--config` reads (dots for nesting).\n\n"
      "| flag | JSON key | default | meaning |\n|---|---|---|---|\n";
  for (const auto& d : decls()) {
    const std::string value = default_text(d);
    std::string name = "--" + std::string(d.flag);
    if (!is_bool(d)) name += d.words ? " X..." : " X";
    std::string help(d.help);
    if (!d.choices.empty()) help += fmt::format(" ({})", d.choices);
    for (size_t bar = help.find('|'); bar != std::string::npos; bar = help.find('|', bar + 2))
      help.replace(bar, 1, "\\|");  // a table cell's bar is escaped
    s += fmt::format("| `{}` | {} | {} | {} |\n", name,
                     d.json.empty() ? std::string() : fmt::format("`{}`", d.json),
                     value.empty() ? std::string() : fmt::format("`{}`", value), help);
  }
  return s;
}

namespace {

std::optional<FlagArity> train_arity(std::string_view name) {
  const Decl* d = find_flag(name);
  if (d == nullptr) return std::nullopt;
  if (is_bool(*d)) return FlagArity::Switch;
  return d->words ? FlagArity::Words : FlagArity::Value;
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

// The training options among `scan`'s flags into `o`, over the JSON config when --config is
// given (read first, so flags override it wherever it appears on the line); the others go to
// `rest` when it is given. The options the JSON config sets count as given.
void apply_scanned(const FlagScan& scan, O& o, TrainFlags* flags) {
  o = O{};
  std::vector<std::string>* given = flags != nullptr ? &flags->given : nullptr;
  for (const ScannedFlag& f : scan.flags) {
    if (f.name == "config") read_json_config(f.values.front(), o, ConfigDialect::Zerotron, given);
    if (f.name == "deepspeed-config")
      read_json_config(f.values.front(), o, ConfigDialect::DeepSpeed, given);
  }
  for (const ScannedFlag& f : scan.flags) {
    const Decl* d = find_flag(f.name);
    if (d == nullptr) {
      flags->rest.push_back(f);
      continue;
    }
    if (flags != nullptr) flags->given.push_back(f.name);
    set_from_text(*d, joined(f.values), o);
  }
  // Checked here, before the runtime's watchdog takes the value (failure-handling.md).
  ZT_REQUIRE(o.comm_timeout >= kMinCommTimeoutS,
             "--comm-timeout must be at least {} s, got {}: a shorter one ends healthy jobs "
             "(a rank delayed by the scheduler) and leaves the hang report no time to see "
             "which rank never arrived",
             kMinCommTimeoutS, o.comm_timeout);
}

}  // namespace

bool parse_train_options(std::span<const std::string_view> args, O& o) {
  const FlagScan scan = scan_flags("train", args, train_arity, train_flag_names());
  if (scan.help) return false;
  apply_scanned(scan, o, nullptr);
  return true;
}

TrainFlags parse_train_flags(std::string_view command, std::span<const std::string_view> args,
                             const FlagArityOf& own_flags,
                             const std::vector<std::string_view>& own_names) {
  TrainFlags f;
  std::vector<std::string_view> names = own_names;
  names.insert(names.end(), train_flag_names().begin(), train_flag_names().end());
  const FlagScan scan = scan_flags(
      command, args,
      [&](std::string_view name) {
        const std::optional<FlagArity> a = train_arity(name);
        return a ? a : own_flags(name);
      },
      names);
  f.help = scan.help;
  if (!f.help) apply_scanned(scan, f.options, &f);
  return f;
}

bool set_train_option(std::string_view flag, std::string_view text, O& o) {
  const Decl* d = find_flag(flag);
  if (d == nullptr) return false;
  set_from_text(*d, text, o);
  return true;
}

TrainFlags parse_command_flags(std::string_view command, std::span<const std::string_view> args,
                               const std::vector<std::string_view>& only) {
  for (const std::string_view flag : only)
    ZT_CHECK(find_flag(flag) != nullptr, "no option --{}", flag);
  TrainFlags f;
  const FlagScan scan = scan_flags(
      command, args,
      [&](std::string_view name) {
        return std::find(only.begin(), only.end(), name) == only.end() ? std::nullopt
                                                                       : train_arity(name);
      },
      only);
  f.help = scan.help;
  if (!f.help) apply_scanned(scan, f.options, &f);
  return f;
}

bool TrainFlags::has(std::string_view flag) const {
  for (const auto& g : given)
    if (g == flag) return true;
  return false;
}

}  // namespace zt
