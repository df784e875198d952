#include "src/train/trainer.h"

#include <chrono>

#include "src/core/log.h"

namespace zt {
namespace {

DType working_dtype(const TrainOptions& o) {
  if (o.bf16) return DType::BF16;
  if (o.fp16) return DType::F16;
  return DType::F32;
}

LossScalerConfig scaler_config(const TrainOptions& o) {
  LossScalerConfig c;
  if (!o.fp16) return c;  // bf16 and fp32 need no scaling
  c.dynamic = o.loss_scale == 0;
  c.scale = c.dynamic ? o.initial_loss_scale : o.loss_scale;
  c.window = o.loss_scale_window;
  c.hysteresis = o.hysteresis;
  c.min_scale = o.min_loss_scale;
  return c;
}

}  // namespace

GptConfig gpt_config_from(const TrainOptions& o) {
  GptConfig c;
  c.num_layers = o.num_layers;
  c.hidden = o.hidden_size;
  c.heads = o.num_attention_heads;
  c.seq_length = o.seq_length;
  c.vocab_size = o.vocab_size;
  c.padded_vocab_size = pad_vocab(o.vocab_size, o.make_vocab_size_divisible_by);
  c.attention_dropout = static_cast<float>(o.attention_dropout);
  c.hidden_dropout = static_cast<float>(o.hidden_dropout);
  return c;
}

Trainer::Trainer(const TrainOptions& options, MemoryPool& pool)
    : o_(options),
      pool_(pool),
      config_(gpt_config_from(options)),
      layout_(ParamLayout::gpt(config_)),
      schedule_{o_.lr, o_.min_lr, o_.lr_warmup_iters,
                o_.lr_decay_iters == 0 ? o_.train_iters : o_.lr_decay_iters, o_.lr_decay_style},
      scaler_(scaler_config(options)),
      data_(static_cast<uint64_t>(o_.seed), o_.seq_length, o_.vocab_size),
      metrics_(o_.metrics_file) {
  const int dp = 1;
  global_batch_ =
      o_.global_batch_size == 0 ? int64_t{o_.micro_batch_size} * dp : int64_t{o_.global_batch_size};
  accumulation_ = static_cast<int>(global_batch_ / (int64_t{o_.micro_batch_size} * dp));
  AdamConfig adam{o_.adam_beta1, o_.adam_beta2, o_.adam_eps, o_.weight_decay, o_.clip_grad};
  optimizer_ = std::make_unique<ZeroOptimizer>(layout_, working_dtype(o_), adam, pool_,
                                               static_cast<uint64_t>(o_.seed));
  activations_ = std::make_unique<KeepAllActivations>(pool_, config_, o_.micro_batch_size);
  model_ = std::make_unique<Gpt>(config_, layout_, o_.micro_batch_size, pool_);
  batch_ = pool_.allocate(static_cast<size_t>(2 * o_.micro_batch_size * o_.seq_length) * 4,
                          MemCategory::Activations);
}

StepMetrics Trainer::train_step() {
  using Clock = std::chrono::steady_clock;
  pool_.reset_peaks();
  const auto t0 = Clock::now();
  const int mb = o_.micro_batch_size, T = o_.seq_length, dp = 1, dp_rank = 0;
  const double scale = scaler_.scale();
  // d(loss)/d(token loss): the loss is the mean over every token of the global batch.
  const float dloss = static_cast<float>(scale / (static_cast<double>(global_batch_) * T));
  auto* tokens = static_cast<int32_t*>(batch_.data());
  int32_t* targets = tokens + mb * T;
  optimizer_->zero_grad();
  double loss = 0;
  const int64_t base = int64_t{iteration_} * global_batch_;
  for (int m = 0; m < accumulation_; ++m) {
    // Megatron's order: micro-step m takes mb·dp consecutive samples, rank r the r-th slice.
    const int64_t first = base + int64_t{m} * mb * dp + int64_t{dp_rank} * mb;
    for (int j = 0; j < mb; ++j) data_.sample(first + j, tokens + j * T, targets + j * T);
    loss += model_->forward_backward(tokens, targets, dloss, *optimizer_, *activations_,
                                     DropoutSeeds{static_cast<uint64_t>(o_.seed), first});
  }
  loss /= accumulation_;
  ++iteration_;
  StepMetrics m;
  m.iteration = iteration_;
  m.train_iters = o_.train_iters;
  m.lr = schedule_.at(iteration_);
  const StepResult r = optimizer_->step(m.lr, scale);
  scaler_.update(r.skipped);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const double tokens_per_step = static_cast<double>(global_batch_) * T;
  m.consumed_samples = int64_t{iteration_} * global_batch_;
  m.lm_loss = loss;
  m.grad_norm = r.grad_norm;
  m.loss_scale = scale;
  m.skipped = r.skipped;
  m.elapsed_ms = ms;
  m.tokens_per_s = tokens_per_step / (ms / 1e3);
  m.tflops_per_rank = config_.flops_per_token() * tokens_per_step / (ms / 1e3) / 1e12;
  m.num_parameters = config_.num_parameters();
  for (size_t c = 0; c < kNumMemCategories; ++c) m.memory_peak[c] = pool_.counters().peak[c];
  m.memory_total_peak = pool_.total_peak();
  return m;
}

const std::vector<StepMetrics>& Trainer::run() {
  log::info(
      "zerotron: {} parameters, {} layers, hidden {}, {} heads, seq {}, vocab {} (padded {}), "
      "{} precision, global batch {} = micro {} x accumulation {}",
      config_.num_parameters(), config_.num_layers, config_.hidden, config_.heads,
      config_.seq_length, config_.vocab_size, config_.padded_vocab_size,
      dtype_name(working_dtype(o_)), global_batch_, o_.micro_batch_size, accumulation_);
  while (iteration_ < o_.train_iters) {
    const StepMetrics m = train_step();
    metrics_.write(m);
    if (m.iteration % o_.log_interval == 0 || m.iteration == o_.train_iters)
      log::line(MetricsWriter::console_line(m));
    history_.push_back(m);
  }
  return history_;
}

}  // namespace zt
