#pragma once
// Training options. Each option is declared exactly once, in options.cpp's table: flag name,
// JSON key, field, help text and check. The table yields the command-line parser, the JSON
// config reader, --help and validation, so no option is parsed in two places.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zt {

struct TrainOptions {
  // model
  int num_layers = 2;
  int hidden_size = 64;
  int num_attention_heads = 4;
  int seq_length = 64;
  int vocab_size = 0;  // mock data: required; real data: from the tokenizer
  int make_vocab_size_divisible_by = 128;
  double attention_dropout = 0.1;
  double hidden_dropout = 0.1;
  // batch and schedule
  int micro_batch_size = 1;
  int global_batch_size = 0;  // 0: micro batch × data-parallel size
  int train_iters = 10;
  double lr = 1e-4;
  double min_lr = 0.0;
  int lr_warmup_iters = 0;
  int lr_decay_iters = 0;  // 0: train_iters
  std::string lr_decay_style = "linear";
  double weight_decay = 0.01;
  double clip_grad = 1.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_eps = 1e-8;
  int64_t seed = 1234;
  // precision
  bool fp16 = false;
  bool bf16 = false;
  bool tf32 = true;         // Megatron's default; only the CUDA backend's fp32 GEMMs read it
  double loss_scale = 0.0;  // 0: dynamic (fp16)
  double initial_loss_scale = 4294967296.0;
  int loss_scale_window = 1000;
  int hysteresis = 2;
  double min_loss_scale = 1.0;
  double max_loss_scale = 4294967296.0;  // 2^32: Megatron's and DeepSpeed's initial scale
  int max_consecutive_skips = 100;
  // parallelism
  int tensor_model_parallel_size = 1;
  int pipeline_model_parallel_size = 1;
  int num_layers_per_virtual_pipeline_stage = 0;  // 0: one model chunk per stage (1F1B)
  bool sequence_parallel = false;
  int zero_stage = 0;
  int64_t reduce_bucket_size = 500'000'000;  // elements
  int64_t allgather_bucket_size = 500'000'000;
  bool overlap_comm = false;
  bool contiguous_gradients = true;
  int64_t prefetch_bucket_size = 50'000'000;
  int64_t param_persistence_threshold = 100'000;
  int64_t max_live_parameters = 1'000'000'000;
  double comm_timeout = 600.0;  // seconds
  bool tp_within_node = true;   // refuse a tensor-parallel group spread over hosts
  // backend
  std::string device = "auto";  // cuda | cpu | auto (cuda when built with it and a GPU is visible)
  // memory
  double device_memory = 0;  // bytes of a fixed device memory to emulate (0: grow as needed)
  // activation memory (ZeRO-R)
  bool checkpoint_activations = false;
  int checkpoint_num_layers = 1;
  bool partition_activations = false;
  bool cpu_checkpointing = false;
  // data
  bool mock_data = false;
  std::string data_path;  // Megatron's words ("P" or "w1 P1 w2 P2 ..."), joined by spaces
  std::string split = "969,30,1";
  std::string tokenizer_type = "GPT2BPETokenizer";
  std::string vocab_file;
  std::string merge_file;
  int eval_interval = 1000;
  int eval_iters = 100;  // global batches per evaluation; 0: none
  // checkpoints
  std::string save;
  int save_interval = 0;  // 0: only at the end (with --save)
  std::string load;
  int keep_last = 0;  // 0: keep every checkpoint
  // clean stops: save and exit 0
  bool exit_signal_handler = false;
  int exit_interval = 0;             // 0: off
  double exit_duration_in_mins = 0;  // 0: off
  // logging
  int log_interval = 100;
  std::string metrics_file;
  std::string config;  // JSON file read before the flags
};

// Parses `args` (JSON config first when --config is given, flags override it) and validates
// every option and their combinations. Throws InputError with one line naming the problem.
// Returns false when --help was asked (the caller prints train_options_help() once).
bool parse_train_options(std::span<const std::string_view> args, TrainOptions& out);

// For commands that take the training options besides flags of their own (`zerotron estimate`,
// `simulate`): the table's flags parsed exactly as `train` parses them (same names, defaults and
// checks, --config included), every other flag left in `rest` with the words after it.
struct TrainFlags {
  TrainOptions options;
  std::vector<std::string> given;         // the table's flags on the line, without "--"
  std::vector<std::string_view> rest;     // the other flags and their values, in order
  bool help = false;                      // --help or -h was asked
  bool has(std::string_view flag) const;  // `flag` without "--" was on the line
};
TrainFlags parse_train_flags(std::span<const std::string_view> args);

// Sets the options a JSON config text names (DeepSpeed-style keys; what --config reads from its
// file). `where` names the source in errors. Throws InputError.
void apply_json_config(std::string_view text, std::string_view where, TrainOptions& out);

// DP = world / (TP·PP); throws InputError when it does not divide.
int data_parallel_size(const TrainOptions& o, int world);
// Model chunks per pipeline stage: 1, or (layers / PP) / --num-layers-per-virtual-pipeline-stage.
int model_chunks(const TrainOptions& o);
// The pipeline checks (layers dividing over stages and chunks, ZeRO stage <= 1, the
// interleaved schedule's micro-batch rule) for `micro_batches` per step and data-parallel rank.
void validate_pipeline_options(const TrainOptions& o, int micro_batches);

// Checks that need the whole set (heads dividing hidden, batch divisibility, …).
void validate_train_options(const TrainOptions& o, int data_parallel_size);

std::string train_options_help();

// A byte count as the flags take it: "34359738368", "32e9", "32GB" (10^9), "32GiB" (2^30),
// also KB/KiB, MB/MiB, TB/TiB. Throws InputError naming --flag.
double parse_size(std::string_view text, std::string_view flag);

}  // namespace zt
