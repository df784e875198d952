#pragma once
// Training options. Each option is declared exactly once, as a row of options.inc: type, field,
// default, flag name, JSON key, check and help text. The rows yield this struct, the
// command-line parser, the JSON config reader, --help, docs/options.md and the checks, so no
// option is declared or parsed in two places.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/config/flag_scan.h"
#include "src/zero/model_state_defaults.h"

namespace zt {

// Each option's default as a constant, for a configuration that starts from the options'
// defaults without a TrainOptions (text options as string_view).
namespace option_defaults {
using namespace model_state_defaults;  // the rows name the model-state defaults by their constant
template <class T>
struct Constant {
  using type = T;
};
template <>
struct Constant<std::string> {
  using type = std::string_view;
};
#define ZT_OPTION(T, field, def, ...) inline constexpr Constant<T>::type field = def;
#include "src/config/options.inc"
#undef ZT_OPTION
}  // namespace option_defaults

// One field per row of options.inc, with the row's default, in --help order.
struct TrainOptions {
#define ZT_OPTION(T, field, ...) T field = T(option_defaults::field);
#include "src/config/options.inc"
#undef ZT_OPTION
};

// Parses `args` (JSON config first when --config is given, flags override it) and validates
// every option and their combinations. Throws InputError with one line naming the problem.
// Returns false when --help was asked (the caller prints train_options_help() once).
bool parse_train_options(std::span<const std::string_view> args, TrainOptions& out);

// For commands that take the training options besides flags of their own (`zerotron estimate`,
// `simulate`): one scan of the line over both tables, the training options set exactly as
// `train` sets them (same names, defaults and checks, --config included), the command's own
// flags (`own_flags` gives their arity, `own_names` their names for "did you mean") left in
// `rest`.
struct TrainFlags {
  TrainOptions options;
  std::vector<std::string> given;         // the table's flags on the line, without "--"
  std::vector<ScannedFlag> rest;          // the command's own flags, in order
  bool help = false;                      // --help or -h was asked
  bool has(std::string_view flag) const;  // `flag` without "--" was on the line
};
TrainFlags parse_train_flags(std::string_view command, std::span<const std::string_view> args,
                             const FlagArityOf& own_flags,
                             const std::vector<std::string_view>& own_names = {});

// Sets the option of `flag` (without "--") from the text the flag would take, with the flag's
// checks (InputError). False when no training option has that flag.
bool set_train_option(std::string_view flag, std::string_view text, TrainOptions& out);

// For a command that reads some of the training options (`zerotron evaluate`): the flags of
// `only` (without "--") are scanned and set as `train` sets them, any other is an unknown flag.
TrainFlags parse_command_flags(std::string_view command, std::span<const std::string_view> args,
                               const std::vector<std::string_view>& only);

// Which reader a JSON config gets: zerotron's own (--config: DeepSpeed's key names, zerotron's
// defaults, an unknown key refused as a likely typo) or DeepSpeed's (--deepspeed-config:
// deepspeed.h).
enum class ConfigDialect { Zerotron, DeepSpeed };

// Sets the options a JSON config text names (DeepSpeed's keys; what --config and
// --deepspeed-config read from their files, each in its dialect: deepspeed.h). `where` names the
// source in errors. Throws InputError. Returns the warning lines printed (keys ignored). The
// flags (without "--") of the options it sets go to `set_flags` when given.
std::vector<std::string> apply_json_config(std::string_view text, std::string_view where,
                                           TrainOptions& out,
                                           ConfigDialect dialect = ConfigDialect::Zerotron,
                                           std::vector<std::string>* set_flags = nullptr);

// "usage: zerotron {command} [flags]" and a line per training option, or per option of `only`
// (flags without "--") when it is not empty: what a command that reads some of them prints.
std::string train_options_help(std::string_view command = "train",
                               const std::vector<std::string_view>& only = {});
// The options as a Markdown table (flag, JSON key, default, help): docs/options.md.
std::string train_options_markdown();

// A byte count as the flags take it: "34359738368", "32e9", "32GB" (10^9), "32GiB" (2^30),
// also KB/KiB, MB/MiB, TB/TiB. Throws InputError naming --flag.
double parse_size(std::string_view text, std::string_view flag);

}  // namespace zt
