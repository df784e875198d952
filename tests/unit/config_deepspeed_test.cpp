// DeepSpeed configs as DeepSpeed's own documentation writes them
// (deepspeedai/DeepSpeed:docs/_pages/config-json.md and
// the getting-started and ZeRO tutorials; the examples are written out here from their published
// text), read by --deepspeed-config with DeepSpeed's meanings and defaults: each documented key's
// effect on the options, the batch identity, "auto", keys ignored with one warning, and keys
// refused because ignoring them would change the math.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "src/config/deepspeed.h"
#include "src/config/derive.h"
#include "src/config/options.h"
#include "src/core/error.h"

namespace zt {
namespace {

// Options from the flags `args` with the DeepSpeed config `json` (--deepspeed-config, or
// --config with `zerotron_dialect`).
TrainOptions with_config(const std::string& json, std::vector<std::string_view> args = {},
                         bool zerotron_dialect = false) {
  const std::string path =
      ::testing::TempDir() + "zt_ds_config." + std::to_string(::getpid()) + ".json";
  {
    std::ofstream f(path);
    f << json;
  }
  std::vector<std::string_view> line = {zerotron_dialect ? "--config" : "--deepspeed-config", path,
                                        "--mock-data", "--vocab-size", "64"};
  line.insert(line.end(), args.begin(), args.end());
  TrainOptions o;
  try {
    parse_train_options(line, o);
  } catch (...) {
    std::remove(path.c_str());
    throw;
  }
  std::remove(path.c_str());
  return o;
}

std::string refusal(const std::string& json) {
  try {
    with_config(json);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> warnings(const std::string& json) {
  TrainOptions o;
  return apply_json_config(json, "ds.json", o, ConfigDialect::DeepSpeed);
}

// The batch on `world` ranks, as `zerotron train` derives it.
BatchConfig batch_on(TrainOptions o, int world) {
  resolve_micro_batch(o, data_parallel_size(o, world));
  return derive(o, world).batch;
}

// getting-started.md's sample config.
constexpr const char* kGettingStarted = R"({
  "train_batch_size": 8,
  "gradient_accumulation_steps": 1,
  "optimizer": {
    "type": "Adam",
    "params": {
      "lr": 0.00015
    }
  },
  "fp16": {
    "enabled": true
  },
  "zero_optimization": true
})";

TEST(DeepSpeedConfig, GettingStartedSample) {
  EXPECT_TRUE(warnings(kGettingStarted).empty());
  const TrainOptions o = with_config(kGettingStarted);
  EXPECT_DOUBLE_EQ(o.lr, 0.00015);
  EXPECT_TRUE(o.fp16);
  EXPECT_EQ(o.zero_stage, 1);  // "zero_optimization": true, DeepSpeed's older form
  EXPECT_DOUBLE_EQ(o.initial_loss_scale, 65536.0) << "DeepSpeed's default initial_scale_power 16";
  EXPECT_EQ(o.log_interval, 10) << "DeepSpeed's default steps_per_print";
  // train_batch_size 8 with 1 accumulation step: the micro batch is 8 / dp.
  const BatchConfig one = batch_on(o, 1), two = batch_on(o, 2);
  EXPECT_EQ(one.micro, 8);
  EXPECT_EQ(one.global, 8);
  EXPECT_EQ(two.micro, 4);
  EXPECT_EQ(two.accumulation, 1);
}

TEST(DeepSpeedConfig, Fp16SectionOfTheReference) {
  const std::string fp16 = R"({"fp16": {
    "enabled": true,
    "auto_cast": false,
    "loss_scale": 0,
    "initial_scale_power": 16,
    "loss_scale_window": 1000,
    "hysteresis": 2,
    "consecutive_hysteresis": false,
    "min_loss_scale": 1,
    "fp16_master_weights_and_grads": false
  }})";
  EXPECT_TRUE(warnings(fp16).empty());
  TrainOptions o = with_config(fp16);
  EXPECT_TRUE(o.fp16);
  EXPECT_EQ(o.loss_scale, 0.0);
  EXPECT_DOUBLE_EQ(o.initial_loss_scale, 65536.0);
  EXPECT_EQ(o.loss_scale_window, 1000);
  EXPECT_EQ(o.hysteresis, 2);
  EXPECT_DOUBLE_EQ(o.min_loss_scale, 1.0);
  o = with_config(R"({"fp16": {"enabled": true, "initial_scale_power": 12, "loss_scale_window": 50,
                     "hysteresis": 4, "min_loss_scale": 0.25}})");
  EXPECT_DOUBLE_EQ(o.initial_loss_scale, 4096.0);
  EXPECT_EQ(o.loss_scale_window, 50);
  EXPECT_EQ(o.hysteresis, 4);
  EXPECT_DOUBLE_EQ(o.min_loss_scale, 0.25);
  // DeepSpeed's min_loss_scale 0 has no floor: fp16's smallest subnormal is the lowest that
  // matters.
  EXPECT_DOUBLE_EQ(with_config(R"({"fp16": {"min_loss_scale": 0}})").min_loss_scale,
                   std::ldexp(1.0, -24));
  // A fixed scale.
  EXPECT_EQ(with_config(R"({"fp16": {"enabled": true, "loss_scale": 128}})").loss_scale, 128.0);
  // zerotron's own --config keeps Megatron's 2^32; a flag overrides either.
  EXPECT_DOUBLE_EQ(with_config(R"({"fp16": {"enabled": true}})", {}, true).initial_loss_scale,
                   std::ldexp(1.0, 32));
  EXPECT_DOUBLE_EQ(with_config(R"({"fp16": {"enabled": true}})", {"--initial-loss-scale", "1024"})
                       .initial_loss_scale,
                   1024.0);
  // What ignoring would change: refused, naming the key.
  EXPECT_NE(refusal(R"({"fp16": {"consecutive_hysteresis": true}})")
                .find("'fp16.consecutive_hysteresis': true is not supported"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"fp16": {"fp16_master_weights_and_grads": true}})")
                .find("fp16.fp16_master_weights_and_grads"),
            std::string::npos);
}

TEST(DeepSpeedConfig, Bf16SectionOfTheReference) {
  EXPECT_TRUE(with_config(R"({"bf16": {"enabled": true}})").bf16);
  // The reference's example keeps master weights and moments in bf16: not zerotron's math.
  EXPECT_NE(refusal(R"({"bf16": {"enabled": true, "bf16_master_weights_and_grads": true,
                                 "bf16_optimizer_states": true}})")
                .find("bf16.bf16_"),
            std::string::npos);
}

// DeepSpeed-Ulysses' sequence parallelism is context parallelism by all-to-all; a flag still
// chooses the ring.
TEST(DeepSpeedConfig, SequenceParallelSizeIsContextParallelByAllToAll) {
  const TrainOptions o = with_config(R"({"sequence_parallel_size": 4})");
  EXPECT_EQ(o.context_parallel_size, 4);
  EXPECT_EQ(o.cp_comm_type, "a2a");
  EXPECT_EQ(with_config(R"({"sequence_parallel_size": 2})", {"--cp-comm-type", "p2p"}).cp_comm_type,
            "p2p");
  EXPECT_NE(refusal(R"({"sequence_parallel_size": 0})").find("sequence_parallel_size"),
            std::string::npos);
}

TEST(DeepSpeedConfig, OptimizerSectionOfTheReference) {
  const TrainOptions o = with_config(R"({"optimizer": {
      "type": "Adam",
      "params": {
        "lr": 0.001,
        "betas": [0.8, 0.999],
        "eps": 1e-8,
        "weight_decay": 3e-7
      }
    }})");
  EXPECT_DOUBLE_EQ(o.lr, 0.001);
  EXPECT_DOUBLE_EQ(o.adam_beta1, 0.8);
  EXPECT_DOUBLE_EQ(o.adam_beta2, 0.999);
  EXPECT_DOUBLE_EQ(o.adam_eps, 1e-8);
  EXPECT_DOUBLE_EQ(o.weight_decay, 3e-7);
  EXPECT_EQ(with_config(R"({"optimizer": {"type": "AdamW", "params": {"torch_adam": true}}})").lr,
            TrainOptions{}.lr);
  EXPECT_NE(refusal(R"({"optimizer": {"type": "Lamb", "params": {"lr": 0.00015}}})")
                .find("'optimizer.type': Lamb is not supported"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"optimizer": {"type": "Adam", "params": {"adam_w_mode": false}}})")
                .find("decoupled"),
            std::string::npos);
}

TEST(DeepSpeedConfig, SchedulerSectionOfTheReference) {
  // The reference's WarmupLR example leaves warmup_type at DeepSpeed's default, log.
  const std::string warmup = R"({"scheduler": {"type": "WarmupLR", "params": {
      "warmup_min_lr": 0, "warmup_max_lr": 0.001, "warmup_num_steps": 1000%s}}})";
  auto with = [&](const std::string& extra) {
    std::string s = warmup;
    s.replace(s.find("%s"), 2, extra);
    return s;
  };
  const TrainOptions log = with_config(with(""));
  EXPECT_EQ(log.lr_warmup_style, "log");
  EXPECT_EQ(with_config(with(R"(, "warmup_type": "log")")).lr_warmup_style, "log");
  EXPECT_NE(refusal(with(R"(, "warmup_type": "exp")"))
                .find("'scheduler.params.warmup_type' must be \"log\" or \"linear\", got exp"),
            std::string::npos);
  const TrainOptions o = with_config(with(R"(, "warmup_type": "linear")"));
  EXPECT_EQ(o.lr_warmup_style, "linear");
  EXPECT_DOUBLE_EQ(o.lr, 0.001);
  EXPECT_EQ(o.lr_warmup_iters, 1000);
  EXPECT_EQ(o.lr_decay_style, "constant");
  const TrainOptions d = with_config(R"({"scheduler": {"type": "WarmupDecayLR", "params": {
      "warmup_max_lr": 0.002, "warmup_num_steps": 10, "warmup_type": "linear",
      "total_num_steps": 100}}})");
  EXPECT_EQ(d.lr_decay_style, "linear");
  EXPECT_EQ(d.lr_decay_iters, 100);
  EXPECT_EQ(d.min_lr, 0.0);
  const TrainOptions c = with_config(R"({"optimizer": {"params": {"lr": 0.004}},
      "scheduler": {"type": "WarmupCosineLR", "params": {"warmup_num_steps": 0,
      "total_num_steps": 50, "cos_min_ratio": 0.25}}})");
  EXPECT_EQ(c.lr_decay_style, "cosine");
  EXPECT_DOUBLE_EQ(c.min_lr, 0.001);
  EXPECT_NE(refusal(R"({"scheduler": {"type": "OneCycle"}})").find("'scheduler.type'"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 1e-5,
                        "warmup_type": "linear"}}})")
                .find("starts from a learning rate of 0"),
            std::string::npos);
}

TEST(DeepSpeedConfig, BatchIdentityAsDeepSpeedChecksIt) {
  // All three: they must agree on the data-parallel size.
  const std::string all = R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4,
                              "gradient_accumulation_steps": 4})";
  EXPECT_EQ(batch_on(with_config(all), 2).accumulation, 4);
  EXPECT_THROW(batch_on(with_config(all), 4), InputError);
  try {
    batch_on(with_config(all), 4);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("must equal --micro-batch-size (4) x "
                                         "--gradient-accumulation-steps (4) x data-parallel size "
                                         "(4)"),
              std::string::npos)
        << e.what();
  }
  // Any two give the third.
  const BatchConfig micro_acc = batch_on(
      with_config(R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4})"), 2);
  EXPECT_EQ(micro_acc.global, 32);
  const BatchConfig train_acc =
      batch_on(with_config(R"({"train_batch_size": 32, "gradient_accumulation_steps": 4})"), 2);
  EXPECT_EQ(train_acc.micro, 4);
  const BatchConfig train_micro =
      batch_on(with_config(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 2})"), 2);
  EXPECT_EQ(train_micro.accumulation, 8);
  // Alone: train_batch_size is micro x dp with one step; the micro batch, micro x dp.
  EXPECT_EQ(batch_on(with_config(R"({"train_batch_size": 32})"), 4).micro, 8);
  EXPECT_EQ(batch_on(with_config(R"({"train_micro_batch_size_per_gpu": 3})"), 2).global, 6);
  EXPECT_THROW(
      batch_on(with_config(R"({"train_batch_size": 30, "gradient_accumulation_steps": 4})"), 2),
      InputError);
  // "auto": the flags' values (the Hugging Face integration's configs).
  const TrainOptions a = with_config(
      R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto", "gradient_clipping": "auto"})",
      {"--micro-batch-size", "2", "--global-batch-size", "8", "--clip-grad", "0.5"});
  const BatchConfig ab = batch_on(a, 2);
  EXPECT_EQ(ab.micro, 2);
  EXPECT_EQ(ab.global, 8);
  EXPECT_EQ(ab.accumulation, 2);
  EXPECT_DOUBLE_EQ(a.clip_grad, 0.5);
}

TEST(DeepSpeedConfig, ZeroTutorialConfigs) {
  // The ZeRO tutorial's stage 2 settings for GPT-2: each key an option.
  const std::string stage2 = R"({"zero_optimization": {
      "stage": 2,
      "contiguous_gradients": true,
      "overlap_comm": true,
      "reduce_scatter": true,
      "reduce_bucket_size": 5e8,
      "allgather_bucket_size": 5e8
    }})";
  EXPECT_TRUE(warnings(stage2).empty());
  const TrainOptions o = with_config(stage2);
  EXPECT_EQ(o.zero_stage, 2);
  EXPECT_TRUE(o.overlap_comm);
  EXPECT_EQ(o.reduce_bucket_size, 500000000);
  EXPECT_EQ(o.allgather_bucket_size, 500000000);
  // Its stage 3 settings with ZeRO-Offload: the optimizer's and the parameters' offload are
  // options (pin_memory: host buffers are pinned anyway).
  const std::string stage3 = R"({"zero_optimization": {
      "stage": 3,
      "contiguous_gradients": true,
      "stage3_max_live_parameters": 1e9,
      "stage3_max_reuse_distance": 1e9,
      "stage3_prefetch_bucket_size": 1e7,
      "stage3_param_persistence_threshold": 1e5,
      "reduce_bucket_size": 1e7,
      "sub_group_size": 1e9,
      "offload_optimizer": {"device": "cpu"},
      "offload_param": {"device": "cpu", "pin_memory": true}
    }})";
  EXPECT_TRUE(warnings(stage3).empty());
  const TrainOptions z = with_config(stage3);
  EXPECT_EQ(z.zero_stage, 3);
  EXPECT_EQ(z.offload_optimizer, "cpu");
  EXPECT_EQ(z.offload_param, "cpu");
  EXPECT_EQ(z.sub_group_size, 1000000000);
  EXPECT_EQ(z.max_live_parameters, 1000000000);
  EXPECT_EQ(z.prefetch_bucket_size, 10000000);
  EXPECT_EQ(z.param_persistence_threshold, 100000);
  EXPECT_EQ(z.reduce_bucket_size, 10000000);
  EXPECT_TRUE(
      warnings(R"({"zero_optimization": {"offload_optimizer": {"device": "none"}}})").empty());
  // ZeRO-Infinity's optimizer on NVMe with DeepSpeed's aio section; its older switch; a partial
  // offload (not built) refused.
  const TrainOptions n = with_config(R"({"zero_optimization": {"stage": 2,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/local_nvme", "pin_memory": true,
                            "buffer_count": 4, "pipeline_read": true, "pipeline_write": true}},
      "aio": {"block_size": 262144, "queue_depth": 32, "thread_count": 1,
              "single_submit": false, "overlap_events": true}})");
  EXPECT_EQ(n.offload_optimizer, "nvme");
  EXPECT_EQ(n.nvme_path, "/local_nvme");
  EXPECT_EQ(n.aio_block_size, 262144);
  EXPECT_EQ(n.aio_queue_depth, 32);
  EXPECT_TRUE(warnings(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme",
      "nvme_path": "/x"}}, "aio": {"thread_count": 4}})")
                  .empty());
  EXPECT_EQ(with_config(R"({"zero_optimization": {"cpu_offload": true}})").offload_optimizer,
            "cpu");
  // ZeRO-Infinity's parameters on NVMe: one directory for both tiers' swap files (the
  // parameters' path alone sets it; two different paths are refused); the older switch.
  const TrainOptions p = with_config(R"({"zero_optimization": {"stage": 3,
      "offload_param": {"device": "nvme", "nvme_path": "/local_nvme", "buffer_count": 5,
                        "buffer_size": 1e8, "max_in_cpu": 1e9, "pin_memory": true}}})");
  EXPECT_EQ(p.offload_param, "nvme");
  EXPECT_EQ(p.nvme_path, "/local_nvme");
  EXPECT_EQ(with_config(R"({"zero_optimization": {"stage": 3,
      "offload_param": {"device": "nvme", "nvme_path": "/a"},
      "offload_optimizer": {"device": "nvme", "nvme_path": "/a"}}})")
                .nvme_path,
            "/a");
  EXPECT_NE(refusal(R"({"zero_optimization": {"stage": 3,
      "offload_param": {"device": "nvme", "nvme_path": "/a"},
      "offload_optimizer": {"device": "nvme", "nvme_path": "/b"}}})")
                .find("one directory"),
            std::string::npos);
  EXPECT_EQ(with_config(R"({"zero_optimization": {"cpu_offload_params": true}})").offload_param,
            "cpu");
  EXPECT_NE(refusal(R"({"zero_optimization": {"offload_optimizer": {"device": "cpu",
      "ratio": 0.3}}})")
                .find("ratio"),
            std::string::npos);
  // Gradients are one pre-allocated buffer here by construction: false changes nothing.
  const std::vector<std::string> c =
      warnings(R"({"zero_optimization": {"contiguous_gradients": false}})");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_NE(c[0].find("'zero_optimization.contiguous_gradients' ignored"), std::string::npos)
      << c[0];
  // ZeRO++'s quantized communication changes the values reduced: refused.
  EXPECT_NE(refusal(R"({"zero_optimization": {"stage": 3, "zero_quantized_gradients": true}})")
                .find("zero_quantized_gradients"),
            std::string::npos);
  // Its hierarchical partition is a placement: ignored with a warning.
  EXPECT_EQ(warnings(R"({"zero_optimization": {"zero_hpz_partition_size": 8}})").size(), 1u);
}

TEST(DeepSpeedConfig, ActivationCheckpointingLoggingAndOtherSections) {
  const TrainOptions o = with_config(R"({
    "activation_checkpointing": {
      "partition_activations": true,
      "cpu_checkpointing": true,
      "contiguous_memory_optimization": false,
      "number_checkpoints": null,
      "synchronize_checkpoint_boundary": false,
      "profile": false
    },
    "steps_per_print": 7,
    "wall_clock_breakdown": true,
    "gradient_clipping": 0.3
  })");
  EXPECT_TRUE(o.partition_activations);
  EXPECT_TRUE(o.cpu_checkpointing);
  EXPECT_EQ(o.log_interval, 7);
  EXPECT_DOUBLE_EQ(o.clip_grad, 0.3);
  // Monitors and profilers left off: nothing to say; turned on: one warning each.
  EXPECT_TRUE(warnings(R"({"tensorboard": {"enabled": false, "output_path": "x"},
                           "flops_profiler": {"enabled": false}})")
                  .empty());
  EXPECT_EQ(warnings(R"({"wandb": {"enabled": true, "project": "p"}})").size(), 1u);
  // Features that change the data or the model: refused when on.
  EXPECT_NE(refusal(R"({"curriculum_learning": {"enabled": true}})").find("curriculum_learning"),
            std::string::npos);
  EXPECT_TRUE(
      refusal(R"({"curriculum_learning": {"enabled": false, "curriculum_type": "x"}})").empty());
  EXPECT_NE(refusal(R"({"sparse_attention": {"mode": "fixed", "block": 16}})")
                .find("'sparse_attention' changes the model's math"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"communication_data_type": "fp16"})").find("communication_data_type"),
            std::string::npos);
}

TEST(DeepSpeedConfig, UnknownKeysWarnOnceEach) {
  const std::vector<std::string> w =
      warnings(R"({"no_such_key": 1, "my_plugin": {"a": 1, "b": 2}, "fp16": {"enabled": true,
                  "no_such_fp16_key": 3}})");
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[0].find("'fp16.no_such_fp16_key' ignored"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("'my_plugin' ignored"), std::string::npos) << w[1];
  EXPECT_NE(w[2].find("'no_such_key' ignored: not a key zerotron knows"), std::string::npos);
  // zerotron's own --config refuses it, as a likely typo.
  EXPECT_THROW(with_config(R"({"no_such_key": 1})", {}, true), InputError);
}

}  // namespace
}  // namespace zt
