// The checks that need several options at once, for derive() and for the planner's commands;
// each option's own check (range, type, choices) is the table's (options.cpp).
#include "src/config/derive.h"

#include "src/core/error.h"
#include "src/data/gpt_dataset.h"
#include "src/data/sample_skips.h"
#include "src/model/pipeline_split.h"
#include "src/pipeline/schedule.h"

namespace zt {

void validate_pipeline_options(const TrainOptions& o, int micro_batches) {
  const int P = o.pipeline_model_parallel_size, k = o.num_layers_per_virtual_pipeline_stage;
  const int first = o.decoder_first_pipeline_num_layers, last = o.decoder_last_pipeline_num_layers;
  if (P == 1) {
    ZT_REQUIRE(k == 0,
               "--num-layers-per-virtual-pipeline-stage needs "
               "--pipeline-model-parallel-size > 1");
    ZT_REQUIRE(first == 0 && last == 0,
               "--decoder-first/last-pipeline-num-layers need --pipeline-model-parallel-size > 1");
    return;
  }
  if (first > 0 || last > 0) {
    // As megatron-core, which takes the virtual stages of an uneven split from
    // --num-virtual-stages-per-pipeline-rank instead.
    ZT_REQUIRE(k == 0,
               "--decoder-first/last-pipeline-num-layers with "
               "--num-layers-per-virtual-pipeline-stage is not supported: the chunks per stage "
               "would differ between stages");
    const std::string why = split_problem({o.num_layers, P, 1, first, last});
    ZT_REQUIRE(why.empty(), "{}", why);
  } else {
    ZT_REQUIRE(o.num_layers % P == 0,
               "--num-layers ({}) must be a multiple of --pipeline-model-parallel-size ({})",
               o.num_layers, P);
  }
  ZT_REQUIRE(k == 0 || (o.num_layers / P) % k == 0,
             "--num-layers-per-virtual-pipeline-stage ({}) must divide the {} layers of a stage", k,
             o.num_layers / P);
  // Stages 2 and 3 keep only a shard of the gradient and reduce-scatter every micro-batch's
  // gradients as backward makes them: a pipeline runs at least P micro-batches per step, so
  // their data-parallel traffic would be that many times stage 1's (README: ZeRO with pipeline
  // parallelism), and the tied embedding's two copies could not be summed before it.
  ZT_REQUIRE(o.zero_stage <= 1,
             "--zero-stage {} with --pipeline-model-parallel-size {} is not supported: stages 2 "
             "and 3 reduce gradients every micro-batch ({} per step here), use --zero-stage 1",
             o.zero_stage, P, micro_batches);
  pipeline::validate({P, micro_batches, model_chunks(o)});
}

void validate_layout_options(const TrainOptions& o, int dp) {
  // The sample runs the whole model on every rank of a stage (src/model/gpt_decoder.h).
  ZT_REQUIRE(o.sample_interval == 0 || o.pipeline_model_parallel_size == 1,
             "--sample-interval needs --pipeline-model-parallel-size 1 (a sample runs the whole "
             "model)");
  ZT_REQUIRE(o.hidden_size % o.num_attention_heads == 0,
             "--num-attention-heads ({}) must divide --hidden-size ({})", o.num_attention_heads,
             o.hidden_size);
  validate_tensor_parallel(gpt_config_from(o), o.tensor_model_parallel_size);
  // Expert parallelism is carved out of the data x context group (docs/design/moe.md).
  const int ep = o.expert_model_parallel_size;
  ZT_REQUIRE(ep == 1 || o.num_experts > 0,
             "--expert-model-parallel-size {} needs a mixture of experts (--num-experts)", ep);
  ZT_REQUIRE((dp * o.context_parallel_size) % ep == 0,
             "--expert-model-parallel-size {} must divide the data-parallel size {} x "
             "--context-parallel-size {}",
             ep, dp, o.context_parallel_size);
  ZT_REQUIRE(ep == 1 || o.sample_interval == 0,
             "--sample-interval needs every expert on one rank: not with "
             "--expert-model-parallel-size {}",
             ep);
  ZT_REQUIRE(!(o.fp16 && o.bf16), "--fp16 and --bf16 are exclusive");
  ZT_REQUIRE(o.micro_batch_size > 0,
             "train_batch_size without train_micro_batch_size_per_gpu needs the data-parallel "
             "size: resolve_micro_batch first");
  const BatchConfig batch = batch_config(o, dp);
  // DeepSpeed's identity, checked as DeepSpeed checks it when all three are given.
  ZT_REQUIRE(o.gradient_accumulation_steps == 0 ||
                 batch.global == int64_t{batch.micro} * o.gradient_accumulation_steps * dp,
             "--global-batch-size ({}) must equal --micro-batch-size ({}) x "
             "--gradient-accumulation-steps ({}) x data-parallel size ({}) (train_batch_size = "
             "train_micro_batch_size_per_gpu x gradient_accumulation_steps x dp)",
             batch.global, batch.micro, o.gradient_accumulation_steps, dp);
  ZT_REQUIRE(batch.global % (int64_t{batch.micro} * dp) == 0,
             "--global-batch-size ({}) must be a multiple of --micro-batch-size ({}) x "
             "data-parallel size ({})",
             batch.global, o.micro_batch_size, dp);
  ZT_REQUIRE(!o.partition_activations || o.checkpoint_activations,
             "--partition-activations needs --checkpoint-activations");
  ZT_REQUIRE(!o.cpu_checkpointing || o.partition_activations,
             "--cpu-checkpointing needs --partition-activations (DeepSpeed's rule)");
  ZT_REQUIRE(o.zero_stage <= 3, "--zero-stage must be 0, 1, 2 or 3, got {}", o.zero_stage);
  // Stages 1-3 hold only a shard of the fp32 master, so a rank cannot cast the parameters it
  // computes with; in fp32 the working parameters are the master itself.
  ZT_REQUIRE(o.working_params != "cast" || o.zero_stage == 0,
             "--working-params cast needs --zero-stage 0 (stages 1-3 hold only a shard of the "
             "fp32 master), got --zero-stage {}",
             o.zero_stage);
  ZT_REQUIRE(o.working_params != "cast" || o.bf16 || o.fp16,
             "--working-params cast needs --bf16 or --fp16 (in fp32 the working parameters are "
             "the master parameters, kept once)");
  validate_pipeline_options(o, batch.accumulation);
}

void validate_train_options(const TrainOptions& o, int dp) {
  validate_layout_options(o, dp);
  ZT_REQUIRE(o.mock_data || !o.data_path.empty(), "no data: pass --data-path or --mock-data");
  ZT_REQUIRE(!(o.mock_data && !o.data_path.empty()), "--mock-data and --data-path are exclusive");
  if (o.mock_data) {
    ZT_REQUIRE(o.vocab_size > 0, "--mock-data needs --vocab-size");
    ZT_REQUIRE(o.vocab_size >= 2, "--vocab-size must be at least 2");
  } else {
    // The files themselves are opened and checked by open_train_data (src/train/train_data.h).
    if (o.tokenizer_type == "HuggingFaceTokenizer")
      ZT_REQUIRE(!o.tokenizer_model.empty() && o.vocab_file.empty() && o.merge_file.empty(),
                 "--data-path with --tokenizer-type HuggingFaceTokenizer needs --tokenizer-model "
                 "(not --vocab-file/--merge-file)");
    else
      ZT_REQUIRE(!o.vocab_file.empty() && !o.merge_file.empty() && o.tokenizer_model.empty(),
                 "--data-path needs --vocab-file and --merge-file (or --tokenizer-type "
                 "HuggingFaceTokenizer --tokenizer-model FILE)");
    data::split_documents(o.split, 1);  // the form only; throws on a malformed --split
  }
  ZT_REQUIRE(o.ckpt_step < 0 || !o.load.empty(),
             "--ckpt-step {} needs --load (the checkpoint directory to load it from)", o.ckpt_step);
  ZT_REQUIRE(!(o.exit_signal_handler && o.no_exit_signal_handler),
             "--exit-signal-handler and --no-exit-signal-handler are exclusive");
  ZT_REQUIRE(!o.async_save || !o.save.empty(), "--async-save needs --save");
  ZT_REQUIRE(o.offload_optimizer != "nvme" || !o.nvme_path.empty(),
             "--offload-optimizer nvme needs --nvme-path DIR (the directory of the swap files)");
  ZT_REQUIRE(o.offload_param != "nvme" || !o.nvme_path.empty(),
             "--offload-param nvme needs --nvme-path DIR (the directory of the swap files)");
  ZT_REQUIRE(o.nvme_path.empty() || o.offload_optimizer == "nvme" || o.offload_param == "nvme",
             "--nvme-path is for --offload-optimizer nvme or --offload-param nvme");
  ZT_REQUIRE(o.offload_param == "none" || o.zero_stage == 3,
             "--offload-param {} needs --zero-stage 3: below it every rank keeps all the "
             "working parameters, gathered, on the device (use --offload-optimizer to move the "
             "optimizer states)",
             o.offload_param);
  ZT_REQUIRE(o.offload_optimizer == "none" || o.working_params != "cast",
             "--offload-optimizer {} and --working-params cast are exclusive: cast working "
             "parameters read the master parameters on the device",
             o.offload_optimizer);
  ZT_REQUIRE(o.aio_block_size % 4096 == 0,
             "--aio-block-size must be a multiple of 4096 bytes, got {}", o.aio_block_size);
  ZT_REQUIRE(o.min_lr <= o.lr, "--min-lr ({}) must not exceed --lr ({})", o.min_lr, o.lr);
  const int decay = lr_decay_iters(o);
  ZT_REQUIRE(o.lr_warmup_iters <= decay,
             "--lr-warmup-iters ({}) must not exceed the decay iterations ({})", o.lr_warmup_iters,
             decay);
  ZT_REQUIRE(o.min_loss_scale <= o.initial_loss_scale,
             "--min-loss-scale must not exceed --initial-loss-scale");
  // A loss scale below fp16's smallest subnormal (2^-24) flushes every gradient to zero. 2^32 is
  // Megatron's initial dynamic scale, the largest any run starts from; above it every gradient
  // larger than 65504 / 2^32 = 1.5e-5 overflows fp16.
  constexpr double kMinScale = 0x1p-24, kMaxScale = 0x1p32;
  struct Scale {
    const char* flag;
    double value;
    bool zero_is_dynamic;
  };
  for (const Scale& s : {Scale{"--loss-scale", o.loss_scale, true},
                         Scale{"--initial-loss-scale", o.initial_loss_scale, false},
                         Scale{"--min-loss-scale", o.min_loss_scale, false},
                         Scale{"--max-loss-scale", o.max_loss_scale, false}})
    ZT_REQUIRE(
        (s.zero_is_dynamic && s.value == 0) || (s.value >= kMinScale && s.value <= kMaxScale),
        "{} must be in [2^-24, 2^32] (fp16's smallest subnormal to Megatron's initial "
        "scale){}, got {:g}",
        s.flag, s.zero_is_dynamic ? ", or 0 for a dynamic scale" : "", s.value);
  ZT_REQUIRE(o.initial_loss_scale <= o.max_loss_scale,
             "--initial-loss-scale ({:g}) must not exceed --max-loss-scale ({:g})",
             o.initial_loss_scale, o.max_loss_scale);
  if (!o.skip_train_samples.empty()) data::SampleSkips::parse(o.skip_train_samples);
  ZT_REQUIRE(o.on_divergence != "rewind" || !o.save.empty(),
             "--on-divergence rewind needs --save: the checkpoints a divergence rewinds to");
  ZT_REQUIRE(o.loss_spike_factor == 0 || o.loss_spike_factor > 1,
             "--loss-spike-factor must be above 1 (a loss above that many times the recent mean), "
             "or 0 for off; got {:g}",
             o.loss_spike_factor);
}

}  // namespace zt
