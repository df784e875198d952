#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "src/core/error.h"
#include "src/train/options.h"

namespace zt {
namespace {

TrainOptions parse(std::vector<std::string_view> args) {
  TrainOptions o;
  parse_train_options(args, o);
  return o;
}

std::string error_of(std::vector<std::string_view> args, int dp = 1) {
  try {
    TrainOptions o = parse(args);
    validate_train_options(o, dp);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TrainOptions, ParsesMegatronFlags) {
  const TrainOptions o = parse({"--num-layers", "8", "--hidden-size=512", "--bf16", "--lr", "3e-4",
                                "--lr-decay-style", "cosine", "--mock-data", "--seed", "7"});
  EXPECT_EQ(o.num_layers, 8);
  EXPECT_EQ(o.hidden_size, 512);
  EXPECT_TRUE(o.bf16);
  EXPECT_TRUE(o.mock_data);
  EXPECT_DOUBLE_EQ(o.lr, 3e-4);
  EXPECT_EQ(o.lr_decay_style, "cosine");
  EXPECT_EQ(o.seed, 7);
}

TEST(TrainOptions, RejectsBadInputWithOneClearLine) {
  EXPECT_NE(error_of({"--no-such-flag"}).find("unknown flag --no-such-flag"), std::string::npos);
  EXPECT_NE(error_of({"--num-layers", "-2"}).find("--num-layers must be positive"),
            std::string::npos);
  EXPECT_NE(error_of({"--num-layers", "2.5"}).find("expects an integer"), std::string::npos);
  EXPECT_NE(error_of({"--lr"}).find("--lr needs a value"), std::string::npos);
  EXPECT_NE(error_of({"--lr-decay-style", "exp"}).find("one of constant|linear|cosine"),
            std::string::npos);
  EXPECT_NE(error_of({"--mock-data", "--vocab-size", "64", "--hidden-size", "64",
                      "--num-attention-heads", "5"})
                .find("must divide --hidden-size"),
            std::string::npos);
  EXPECT_NE(error_of({"--mock-data", "--vocab-size", "64", "--micro-batch-size", "3",
                      "--global-batch-size", "8"})
                .find("multiple of --micro-batch-size"),
            std::string::npos);
  EXPECT_NE(error_of({"--mock-data", "--vocab-size", "64", "--fp16", "--bf16"}).find("exclusive"),
            std::string::npos);
  EXPECT_EQ(error_of({"--mock-data", "--vocab-size", "64"}), "");
}

TEST(TrainOptions, JsonConfigThenFlagsOverride) {
  const std::string path = ::testing::TempDir() + "zt_options_test.json";
  {
    std::ofstream f(path);
    f << R"({"num_layers": 6, "train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": true},
            "gradient_clipping": 0.5})";
  }
  const TrainOptions o = parse({"--config", path, "--num-layers", "3"});
  EXPECT_EQ(o.num_layers, 3);
  EXPECT_EQ(o.micro_batch_size, 4);
  EXPECT_TRUE(o.bf16);
  EXPECT_DOUBLE_EQ(o.clip_grad, 0.5);
  {
    std::ofstream f(path);
    f << R"({"no_such_key": 1})";
  }
  EXPECT_NE(error_of({"--config", path}).find("unknown key 'no_such_key'"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace zt
