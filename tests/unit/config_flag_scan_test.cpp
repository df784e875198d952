// The one command-line grammar: every subcommand's flags, the training options' and a command's
// own, scan the same way and fail with the same one-line messages.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/config/command_flags.h"
#include "src/config/options.h"
#include "src/core/error.h"

namespace zt {
namespace {

const std::vector<FlagSpec> kSpecs = {
    {"--input", "PATH", "input", true},
    {"--json", "", "a switch"},
    {"--names", "N...", "several", false, true},
    {"--count", "N", "a number"},
};

std::string error_of(std::vector<std::string_view> args) {
  try {
    ParsedFlags::parse("cmd", kSpecs, args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(FlagScan, BothValueFormsSwitchesAndWordLists) {
  const auto f =
      ParsedFlags::parse("cmd", kSpecs,
                         std::vector<std::string_view>{"--input=a.txt", "--json", "--names", "x",
                                                       "y", "--count", "-3"});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->str("--input"), "a.txt");
  EXPECT_TRUE(f->has("--json"));
  EXPECT_EQ(f->list("--names", {}), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(f->integer("--count", 0, -10, 10), -3);  // a single dash is a value
}

TEST(FlagScan, SwitchFalseIsAbsentAndTheLastOccurrenceWins) {
  const auto f = ParsedFlags::parse(
      "cmd", kSpecs, std::vector<std::string_view>{"--input", "a", "--json=false", "--input", "b"});
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(f->has("--json"));
  EXPECT_EQ(f->str("--input"), "b");
}

TEST(FlagScan, HelpAnywhereWinsOverErrors) {
  testing::internal::CaptureStdout();
  const auto f = ParsedFlags::parse("cmd", kSpecs, std::vector<std::string_view>{"--bogus", "-h"});
  EXPECT_NE(testing::internal::GetCapturedStdout().find("usage: zerotron cmd"), std::string::npos);
  EXPECT_FALSE(f.has_value());
}

TEST(FlagScan, OneLineErrorsNameTheCommand) {
  EXPECT_EQ(error_of({"--bogus"}), "cmd: unknown flag --bogus, run 'zerotron cmd --help'");
  EXPECT_EQ(error_of({"stray"}), "cmd: unexpected argument 'stray'");
  EXPECT_EQ(error_of({"--input", "--json"}), "cmd: --input needs a value");
  EXPECT_EQ(error_of({"--input", "a", "--names"}), "cmd: --names needs a value");
  EXPECT_EQ(error_of({"--input", "a", "--json=yes"}),
            "cmd: --json expects true or false, got 'yes'");
  EXPECT_EQ(error_of({"--json"}), "cmd: missing required flag --input PATH");
}

// train and the planner's commands use the same scanner over the options table.
TEST(FlagScan, TrainingOptionsTakeTheSameGrammar) {
  TrainOptions o;
  ASSERT_TRUE(
      parse_train_options(std::vector<std::string_view>{"--overlap-comm=false", "--data-path",
                                                        "0.5", "a", "0.5", "b", "--seq-length=32"},
                          o));
  EXPECT_FALSE(o.overlap_comm);
  EXPECT_EQ(o.data_path, "0.5 a 0.5 b");
  EXPECT_EQ(o.seq_length, 32);
  try {
    parse_train_options(std::vector<std::string_view>{"--lr", "--seed", "1"}, o);
    FAIL() << "a value never starts with --";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "train: --lr needs a value");
  }
}

TEST(FlagScan, PlannerCommandsSplitTheLineOverBothTables) {
  const TrainFlags f = parse_train_flags(
      "estimate",
      std::vector<std::string_view>{"--num-layers", "3", "--json", "--count=4", "--bf16"},
      arity_of(kSpecs));
  EXPECT_EQ(f.options.num_layers, 3);
  EXPECT_TRUE(f.options.bf16);
  EXPECT_TRUE(f.has("num-layers"));
  ASSERT_EQ(f.rest.size(), 2u);
  EXPECT_EQ(f.rest[1].name, "count");
  EXPECT_EQ(f.rest[1].values, std::vector<std::string>{"4"});
  try {
    parse_train_flags("estimate", std::vector<std::string_view>{"--bogus"},
                      [](std::string_view) { return std::nullopt; });
    FAIL() << "unknown flag accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "estimate: unknown flag --bogus, run 'zerotron estimate --help'");
  }
}

// An unknown flag near one of the command's names is named in the one error line.
TEST(FlagScan, UnknownFlagsSuggestTheNearestName) {
  TrainOptions o;
  auto train_error = [&](std::vector<std::string_view> args) {
    try {
      parse_train_options(args, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(train_error({"--num-layer", "2"}),
            "train: unknown flag --num-layer (did you mean --num-layers?), run 'zerotron train "
            "--help'");
  EXPECT_EQ(train_error({"--hiden-size", "2"}),
            "train: unknown flag --hiden-size (did you mean --hidden-size?), run 'zerotron train "
            "--help'");
  EXPECT_EQ(train_error({"--zero-stgae", "2"}),  // a transposition is one edit
            "train: unknown flag --zero-stgae (did you mean --zero-stage?), run 'zerotron train "
            "--help'");
  EXPECT_EQ(train_error({"--no-such-flag"}),
            "train: unknown flag --no-such-flag, run 'zerotron train --help'");
  EXPECT_EQ(error_of({"--inptu", "a"}),
            "cmd: unknown flag --inptu (did you mean --input?), run 'zerotron cmd --help'");
  // Both tables of the planner's commands.
  try {
    parse_train_flags("estimate", std::vector<std::string_view>{"--counts"}, arity_of(kSpecs),
                      flag_names(kSpecs));
    FAIL() << "unknown flag accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "estimate: unknown flag --counts (did you mean --count?), run 'zerotron estimate "
                 "--help'");
  }
  // Up to 4 characters one edit, up to 8 two, beyond that three.
  const std::vector<std::string_view> names = {"lr", "seed", "min-lr", "num-layers"};
  EXPECT_EQ(nearest_flag("l", names), "lr");
  EXPECT_EQ(nearest_flag("sd", names), "");
  EXPECT_EQ(nearest_flag("mn-l", names), "");
  EXPECT_EQ(nearest_flag("minlr", names), "min-lr");
  EXPECT_EQ(nearest_flag("nmu-lyrs", names), "");
  EXPECT_EQ(nearest_flag("numlayer", names), "num-layers");
}

// evaluate scans only the training options it reads.
TEST(FlagScan, ACommandReadingSomeOptionsRefusesTheOthers) {
  const std::vector<std::string_view> only = {"load", "eval-iters"};
  const TrainFlags f = parse_command_flags(
      "evaluate", std::vector<std::string_view>{"--load", "ck", "--eval-iters=3"}, only);
  EXPECT_EQ(f.options.load, "ck");
  EXPECT_EQ(f.options.eval_iters, 3);
  EXPECT_TRUE(f.has("eval-iters"));
  EXPECT_FALSE(f.has("lr"));
  try {
    parse_command_flags("evaluate", std::vector<std::string_view>{"--lr", "1"}, only);
    FAIL() << "a flag evaluate does not read was accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "evaluate: unknown flag --lr, run 'zerotron evaluate --help'");
  }
  const std::string help = train_options_help("evaluate", only);
  EXPECT_EQ(help.rfind("usage: zerotron evaluate [flags]", 0), 0u) << help;
  EXPECT_NE(help.find("--eval-iters"), std::string::npos);
  EXPECT_EQ(help.find("--lr "), std::string::npos);
}

}  // namespace
}  // namespace zt
