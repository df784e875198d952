#pragma once
// The flags of a subcommand other than `train` (prepare-data, train-tokenizer, import, export, and
// what estimate and simulate add to the training options): a table of FlagSpec per command,
// each flag declared once with its help, scanned by the one scanner (flag_scan.h) and read back
// by name. The training options have their own table (options.inc), which estimate and simulate
// read too.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/config/flag_scan.h"

namespace zt {

struct FlagSpec {
  std::string_view name;   // "--input"
  std::string_view value;  // metavar, empty for a boolean switch
  std::string_view help;
  bool required = false;
  bool many = false;  // takes every following value up to the next --flag (Megatron's nargs='+')
};

// How the scanner reads `spec`'s values.
FlagArity arity_of(const FlagSpec& spec);
// The spec named `name` (without "--") in `specs`, or null.
const FlagSpec* find_spec(const std::vector<FlagSpec>& specs, std::string_view name);
// The scanner's view of `specs`: each flag's arity, nullopt for a name not among them. `specs`
// must outlive the function.
FlagArityOf arity_of(const std::vector<FlagSpec>& specs);
// The names of `specs` without "--" ("did you mean" candidates).
std::vector<std::string_view> flag_names(const std::vector<FlagSpec>& specs);
// "usage: zerotron {command} [flags]" and a line per spec.
void print_usage(std::string_view command, const std::vector<FlagSpec>& specs);

class ParsedFlags {
 public:
  // Scans `args` against `specs`. Returns nullopt after printing usage when --help / -h is given.
  static std::optional<ParsedFlags> parse(std::string_view command,
                                          const std::vector<FlagSpec>& specs,
                                          std::span<const std::string_view> args);
  // The flags of `specs` already scanned (with other tables' flags, by estimate and simulate);
  // checks that the required ones are there.
  static ParsedFlags from_scanned(std::string_view command, const std::vector<FlagSpec>& specs,
                                  const std::vector<ScannedFlag>& scanned);

  // `name` with its "--". A switch given as --name=false counts as absent.
  bool has(std::string_view name) const { return values_.count(std::string(name)) != 0; }
  std::string str(std::string_view name, std::string fallback = "") const;
  std::vector<std::string> list(std::string_view name, std::vector<std::string> fallback) const;
  int64_t integer(std::string_view name, int64_t fallback, int64_t min, int64_t max) const;
  // A finite number in [min, max].
  double real(std::string_view name, double fallback, double min, double max) const;

 private:
  std::string command_;
  std::map<std::string, std::vector<std::string>> values_;
};

// The saved iteration a command reading a checkpoint (export, generate) was asked for:
// --ckpt-step N (Megatron's name, as train and evaluate take it) or its older spelling
// --iteration N, not both; nothing for the one `latest` names.
std::optional<int64_t> checkpoint_step_flag(const ParsedFlags& f);

}  // namespace zt
