#pragma once
// The one command-line scanner. Every subcommand's arguments go through scan_flags, whichever
// table declares its flags (the training options of options.inc, a command's FlagSpec list, or
// both for estimate and simulate), so every command takes the same grammar: `--name value`,
// `--name=value`, a switch alone or as `--switch=true|false`, a word list up to the next flag,
// and --help / -h anywhere.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zt {

enum class FlagArity : uint8_t {
  Switch,  // no value; `--name=true|false` also accepted
  Value,   // one value
  Words,   // every following word up to the next flag (Megatron's nargs='+'), at least one
};

struct ScannedFlag {
  std::string name;                 // without the leading "--"
  std::vector<std::string> values;  // a switch: {"true"} or {"false"}
};

struct FlagScan {
  bool help = false;               // --help or -h was given: nothing else was checked
  std::vector<ScannedFlag> flags;  // in command-line order
};

// The arity of a flag (name without "--"), or nullopt when the command has no such flag.
using FlagArityOf = std::function<std::optional<FlagArity>(std::string_view name)>;

// Throws InputError with one line, prefixed "{command}: ", on an argument that is not a flag, an
// unknown flag (with the nearest of `known`, the command's flag names without "--", as "did you
// mean"), a missing value (a value never starts with "--") or a switch given a value other than
// true/false/1/0.
FlagScan scan_flags(std::string_view command, std::span<const std::string_view> args,
                    const FlagArityOf& arity_of, const std::vector<std::string_view>& known = {});

// The name of `known` nearest to `name` by edit distance (insertions, deletions, substitutions
// and transpositions of adjacent characters, each counting 1), when it is near enough to be a
// likely typo (at most 1 edit for names of up to 4 characters, 2 up to 8, 3 beyond); ties go to
// the earlier name. Empty when none is.
std::string_view nearest_flag(std::string_view name, const std::vector<std::string_view>& known);

}  // namespace zt
