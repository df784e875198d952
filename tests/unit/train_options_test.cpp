#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>

#include <fstream>
#include <string>
#include <vector>

#include "src/config/derive.h"
#include "src/core/error.h"

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
  EXPECT_NE(error_of({"--mock-data", "--vocab-size", "64", "--async-save"})
                .find("--async-save needs --save"),
            std::string::npos);
  EXPECT_NE(error_of({"--mock-data", "--vocab-size", "64", "--save", "ck", "--exit-signal-handler",
                      "--no-exit-signal-handler"})
                .find("--exit-signal-handler and --no-exit-signal-handler are exclusive"),
            std::string::npos);
  EXPECT_EQ(error_of({"--mock-data", "--vocab-size", "64"}), "");
}

// Context parallelism: 2·cp equal chunks of the sequence; a tensor-parallel rank's heads and
// key/value heads divisible by cp (the all-to-all hands each context rank whole heads); with
// sequence parallelism, a context rank's tokens divisible by tp; scaled rope needs rope.
TEST(TrainOptions, RefusesContextSplitsThatDoNotDivide) {
  auto cp = [](std::vector<std::string_view> more) {
    std::vector<std::string_view> a = {"--mock-data", "--vocab-size", "64", "--seq-length", "64"};
    a.insert(a.end(), more.begin(), more.end());
    return error_of(a);
  };
  EXPECT_EQ(cp({"--context-parallel-size", "4"}), "");
  EXPECT_NE(cp({"--context-parallel-size", "3"}).find("not divisible into 2 x 3 = 6 equal chunks"),
            std::string::npos);
  // The ring takes any head count; the all-to-all needs the heads (4 here) to divide.
  EXPECT_EQ(cp({"--context-parallel-size", "8"}), "");
  EXPECT_NE(cp({"--context-parallel-size", "8", "--cp-comm-type", "a2a"}).find("attention heads"),
            std::string::npos);
  EXPECT_NE(cp({"--cp-comm-type", "ring"}).find("--cp-comm-type"), std::string::npos);
  EXPECT_NE(cp({"--context-parallel-size", "2", "--tensor-model-parallel-size", "4",
                "--sequence-parallel", "--seq-length", "36"})
                .find("not divisible by --tensor-model-parallel-size 4"),
            std::string::npos);
  EXPECT_NE(cp({"--context-parallel-size", "0"}).find("--context-parallel-size must be positive"),
            std::string::npos);
  EXPECT_NE(cp({"--rope-scaling-type", "llama3"}).find("needs --position-embedding-type rope"),
            std::string::npos);
  EXPECT_NE(cp({"--position-embedding-type", "rope", "--rope-scaling-type", "llama3",
                "--rope-scaling-low-freq-factor", "4", "--rope-scaling-high-freq-factor", "2"})
                .find("--rope-scaling-low-freq-factor"),
            std::string::npos);
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

std::string config_error(const std::string& json) {
  // Named per process: CTest runs each test of this file as its own process, in parallel.
  const std::string path =
      ::testing::TempDir() + "zt_options_hostile." + std::to_string(::getpid()) + ".json";
  {
    std::ofstream f(path);
    f << json;
  }
  std::string e = error_of({"--config", path});
  std::remove(path.c_str());
  return e;
}

TEST(TrainOptions, JsonConfigOfTheWrongTypeIsRefused) {
  EXPECT_NE(config_error(R"({"num_layers": 4.5})").find("--num-layers expects an integer"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"num_layers": true})")
                .find("key 'num_layers' must be an integer, got boolean true"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"num_layers": -5})").find("--num-layers must be positive"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"num_layers": "8"})").find("must be an integer, got string 8"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"fp16": {"enabled": 1}})").find("must be true or false"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"lr_decay_style": ["cosine"]})").find("must be a string, got array"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"num_layers": 3e9})").find("out of range"), std::string::npos);
  EXPECT_NE(config_error("[1, 2]").find("must hold a JSON object, got array"), std::string::npos);
}

TEST(TrainOptions, JsonConfigIsBoundedAndQuotedShortly) {
  // 100000 nested arrays: refused while parsing (printing such a value overflowed the stack).
  const std::string deep =
      R"({"num_layers": )" + std::string(100000, '[') + "1" + std::string(100000, ']') + "}";
  const std::string e = config_error(deep);
  EXPECT_NE(e.find("nests deeper than 8 levels"), std::string::npos) << e;
  // A long string is refused with an excerpt, not echoed whole.
  const std::string long_string =
      config_error(R"({"save": ")" + std::string(100000, 'x') + R"("})");
  EXPECT_NE(long_string.find("holds a string of 100000 bytes"), std::string::npos);
  EXPECT_LT(long_string.size(), 300u) << long_string;
  const std::string long_bad = config_error(R"({"num_layers": [)" + std::string(5000, '1') + "]}");
  EXPECT_LT(long_bad.size(), 300u) << long_bad;
  const std::string broken = config_error(R"({"save": ")" + std::string(5000, 'y'));
  EXPECT_NE(broken.find("is not valid JSON"), std::string::npos);
  EXPECT_LT(broken.size(), 400u) << broken;
}

TEST(TrainOptions, ConfigMustBeARegularFile) {
  EXPECT_NE(error_of({"--config", "/dev/zero"}).find("is not a regular file"), std::string::npos);
  EXPECT_NE(error_of({"--config", "/"}).find("is not a regular file"), std::string::npos);
  EXPECT_NE(error_of({"--config", "/nonexistent/zt.json"}).find("cannot open --config file"),
            std::string::npos);
}

TEST(TrainOptions, FlagValuesAreQuotedShortly) {
  const std::string huge(100000, '7');
  const std::string e = error_of({"--lr-decay-style", huge});
  EXPECT_NE(e.find("one of constant|linear|cosine"), std::string::npos);
  EXPECT_LT(e.size(), 300u);
}

TEST(Derive, ComputesTheRunFromTheOptions) {
  const DerivedConfig d = derive(parse({"--mock-data",
                                        "--vocab-size",
                                        "100",
                                        "--tensor-model-parallel-size",
                                        "2",
                                        "--micro-batch-size",
                                        "2",
                                        "--global-batch-size",
                                        "16",
                                        "--fp16",
                                        "--zero-stage",
                                        "2",
                                        "--overlap-comm",
                                        "--lr-decay-iters",
                                        "0",
                                        "--train-iters",
                                        "7",
                                        "--checkpoint-activations",
                                        "--checkpoint-num-layers",
                                        "2"}),
                                 8);
  EXPECT_EQ(d.dp, 4);
  EXPECT_EQ(d.world, 8);
  EXPECT_EQ(d.batch.global, 16);
  EXPECT_EQ(d.batch.accumulation, 2);
  EXPECT_EQ(d.working, DType::F16);
  EXPECT_EQ(d.model.dtype, DType::F16);
  EXPECT_EQ(d.model.padded_vocab_size, 256);  // 100 padded to 128 x tp 2
  EXPECT_TRUE(d.scaler.dynamic);
  EXPECT_EQ(d.scaler.scale, 4294967296.0);
  EXPECT_EQ(d.zero.stage, 2);
  EXPECT_TRUE(d.zero.overlap_comm);
  EXPECT_EQ(d.adam.clip_grad, 1.0);
  EXPECT_EQ(d.lr_decay_iters, 7);
  EXPECT_TRUE(d.checkpoint_activations);
  EXPECT_EQ(d.checkpoint.span, 2);
}

TEST(Derive, GlobalBatchDefaultsToOneMicroBatchPerRank) {
  const DerivedConfig d =
      derive(parse({"--mock-data", "--vocab-size", "100", "--micro-batch-size", "3", "--bf16"}), 4);
  EXPECT_EQ(d.batch.global, 12);
  EXPECT_EQ(d.batch.accumulation, 1);
  EXPECT_EQ(d.working, DType::BF16);
  EXPECT_FALSE(d.scaler.dynamic);  // bf16 needs no scaling
}

TEST(Derive, PipelineTurnsOverlapOffAndChecksTheLayout) {
  const DerivedConfig d = derive(
      parse({"--mock-data", "--vocab-size", "100", "--num-layers", "8",
             "--pipeline-model-parallel-size", "2", "--num-layers-per-virtual-pipeline-stage", "2",
             "--global-batch-size", "4", "--overlap-comm", "--zero-stage", "1"}),
      2);
  EXPECT_EQ(d.pp, 2);
  EXPECT_EQ(d.chunks, 2);
  EXPECT_FALSE(d.zero.overlap_comm);
  EXPECT_THROW(derive(parse({"--mock-data", "--vocab-size", "100", "--zero-stage", "4"}), 1),
               InputError);
  EXPECT_THROW(
      derive(parse({"--mock-data", "--vocab-size", "100", "--tensor-model-parallel-size", "2"}),
             3),  // world 3 over tp 2
      InputError);
}

TEST(Derive, DefaultsAreTheOptionRows) {
  const TrainOptions o;
  EXPECT_EQ(o.reduce_bucket_size, option_defaults::reduce_bucket_size);
  EXPECT_EQ(o.lr_decay_style, option_defaults::lr_decay_style);
  EXPECT_EQ(o.initial_loss_scale, 4294967296.0);
  EXPECT_EQ(o.split, "969,30,1");
}

}  // namespace
}  // namespace zt
