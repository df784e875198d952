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

}  // namespace
}  // namespace zt
