#include "src/train/trainer.h"

#include <chrono>
#include <string>
#include <utility>

#include "src/checkpoint/checkpoint.h"
#include "src/core/log.h"
#include "src/train/exit_conditions.h"
#include "src/train/training_settings.h"

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
  c.max_scale = o.max_loss_scale;
  c.max_consecutive_skips = o.max_consecutive_skips;
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
  c.padded_vocab_size =
      padded_vocab_size(o.vocab_size, o.make_vocab_size_divisible_by, o.tensor_model_parallel_size);
  c.attention_dropout = static_cast<float>(o.attention_dropout);
  c.hidden_dropout = static_cast<float>(o.hidden_dropout);
  c.dtype = working_dtype(o);
  c.sequence_parallel = o.sequence_parallel;
  return c;
}

Trainer::Trainer(const TrainOptions& options, const DeviceContext& ctx, comm::Topology& topology,
                 TrainData data)
    : o_(options),
      ctx_(ctx),
      pool_(ctx.pool()),
      topo_(topology),
      meter_(topology.world().stats()),
      reducer_(topology.host_world(), ctx.host(), kNumMemCategories + 2),
      config_(gpt_config_from(options)),
      layout_(ParamLayout::gpt(
          config_, topology.tp_size(), topology.tp_rank(),
          PipelinePart{topology.pp_size(), topology.pp_rank(), model_chunks(options)})),
      schedule_{o_.lr, o_.min_lr, o_.lr_warmup_iters,
                o_.lr_decay_iters == 0 ? o_.train_iters : o_.lr_decay_iters, o_.lr_decay_style},
      scaler_(scaler_config(options)),
      data_(std::move(data)),
      // Metrics are reduced over ranks; rank 0 alone writes them.
      metrics_(topology.rank() == 0 ? o_.metrics_file : std::string()) {
  if (data_.train == nullptr) {
    ZT_CHECK(o_.data_path.empty(), "a --data-path run must pass open_train_data()'s streams");
    data_ = open_train_data(o_);
  }
  ZT_CHECK(config_.vocab_size > 0, "the options' vocab_size must be set (open_train_data sets it)");
  dp_ = topo_.dp_size();
  dp_rank_ = topo_.dp_rank();
  world_ = topo_.world_size();
  pp_ = topo_.pp_size();
  pp_rank_ = topo_.pp_rank();
  global_batch_ = o_.global_batch_size == 0 ? int64_t{o_.micro_batch_size} * dp_
                                            : int64_t{o_.global_batch_size};
  accumulation_ = static_cast<int>(global_batch_ / (int64_t{o_.micro_batch_size} * dp_));
  AdamConfig adam{o_.adam_beta1, o_.adam_beta2, o_.adam_eps, o_.weight_decay, o_.clip_grad};
  optimizer_ = std::make_unique<ZeroOptimizer>(layout_, working_dtype(o_), adam, ctx_,
                                               static_cast<uint64_t>(o_.seed), zero_config());
  const pipeline::ScheduleShape shape{pp_, accumulation_, model_chunks(o_)};
  const ActivationSlots slots =
      pp_ > 1 ? pipeline::StageRunner::slots(config_, shape, pp_rank_) : ActivationSlots{};
  if (o_.checkpoint_activations) {
    CheckpointConfig cp;
    cp.span = o_.checkpoint_num_layers;
    cp.partition = o_.partition_activations;
    cp.cpu = o_.cpu_checkpointing;
    cp.tp = &topo_.tp();
    // On the CPU backend host memory is the same pool; the category tells them apart.
    activations_ = std::make_unique<ActivationCheckpointer>(ctx_, config_, o_.micro_batch_size,
                                                            layout_.tp_size(), cp, slots);
  } else {
    activations_ = std::make_unique<KeepAllActivations>(pool_, config_, o_.micro_batch_size,
                                                        layout_.tp_size(), slots);
  }
  model_ = std::make_unique<Gpt>(config_, layout_, o_.micro_batch_size, ctx_, &topo_.tp());
  if (pp_ > 1)
    pipeline_ = std::make_unique<pipeline::StageRunner>(*model_, *activations_, topo_.pp(), shape,
                                                        ctx_, o_.micro_batch_size);
  const size_t batch_bytes = static_cast<size_t>(2 * o_.micro_batch_size * o_.seq_length) * 4;
  batch_ = pool_.allocate(batch_bytes, MemCategory::Activations);
  if (ctx_.needs_staging()) {
    batch_host_ = ctx_.host().allocate(batch_bytes, MemCategory::Buffers);
    checkpoint_staging_ = HostStaging(ctx_);
  }
}

ZeroConfig Trainer::zero_config() const {
  ZeroConfig zero;
  zero.stage = o_.zero_stage;
  zero.dp = &topo_.dp();
  zero.world = &topo_.host_world();
  zero.tp_rank = topo_.tp_rank();
  zero.reduce_bucket_elems = o_.reduce_bucket_size;
  zero.allgather_bucket_elems = o_.allgather_bucket_size;
  zero.overlap_comm = o_.overlap_comm;
  zero.prefetch_bucket_elems = o_.prefetch_bucket_size;
  zero.param_persistence_threshold = o_.param_persistence_threshold;
  zero.max_live_parameters = o_.max_live_parameters;
  if (pp_ > 1) {
    // The data-parallel reduction waits for the whole schedule and the tied embedding's sum
    // (DeepSpeed's pipeline order: tied gradients, then data-parallel gradients).
    zero.overlap_comm = false;
    const PipelinePart& part = layout_.pipeline();
    if (part.first() || part.last()) {
      zero.tied = topo_.embedding();
      const ParamSpec& word = layout_.find("embedding.word");
      zero.tied_params = {static_cast<int>(&word - layout_.params().data())};
      zero.tied_copy = part.last();  // the first stage's original counts in the norm
    }
  }
  return zero;
}

void Trainer::load_batch(const BatchSource& source, int64_t first) {
  load_batch_into(source, first, static_cast<int32_t*>(batch_.data()));
}

void Trainer::load_batch_into(const BatchSource& source, int64_t first, int32_t* dst) {
  const int mb = o_.micro_batch_size, T = o_.seq_length;
  auto* tokens = batch_host_.data() ? static_cast<int32_t*>(batch_host_.data()) : dst;
  int32_t* targets = tokens + mb * T;
  for (int j = 0; j < mb; ++j) {
    source.sample(first + j, tokens + j * T, targets + j * T);
    check_sample(first + j, tokens + j * T, targets + j * T);
  }
  if (batch_host_.data() != nullptr)
    ctx_.backend().copy_to_device(dst, batch_host_.data(), batch_host_.bytes());
}

int64_t Trainer::first_sample(int64_t base, int m) const {
  // Megatron's order: micro-step m takes mb·dp consecutive samples, rank r the r-th slice.
  return base + int64_t{m} * o_.micro_batch_size * dp_ + int64_t{dp_rank_} * o_.micro_batch_size;
}

double Trainer::pipeline_loss(double loss) const {
  // Averaged over every rank below, where only the last stage's ranks hold a loss: they count
  // pp times.
  if (pp_ == 1) return loss;
  return layout_.pipeline().last() ? loss * pp_ : 0.0;
}

void Trainer::check_sample(int64_t index, const int32_t* tokens, const int32_t* targets) const {
  // Once, on the host, before any kernel sees the ids: the embedding would silently read zeros
  // and the loss be wrong (or, on CUDA, NaN) for an id outside the vocabulary.
  const int T = o_.seq_length, v = config_.vocab_size;
  for (int i = 0; i < 2 * T; ++i) {
    const int32_t id = i < T ? tokens[i] : targets[i - T];
    ZT_REQUIRE(id >= 0 && id < v,
               "sample {} of {} holds token id {} at position {}, outside the vocabulary [0, {}): "
               "the data does not match --vocab-size or the tokenizer",
               index,
               o_.data_path.empty() ? "the sample stream" : "--data-path '" + o_.data_path + "'",
               id, i < T ? i : i - T + 1, v);
  }
}

void Trainer::mid_step() {
  if (hooks_.mid_step) hooks_.mid_step(iteration_ + 1);
}

void Trainer::save(bool print) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string where =
      save_checkpoint(o_.save, hooks_.save ? hooks_.save(iteration_) : SaveHooks{});
  saved_iteration_ = iteration_;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (print) log::info(" saved checkpoint at iteration {} to {} ({:.2f} s)", iteration_, where, s);
}

CheckpointState Trainer::checkpoint_state() {
  return CheckpointState{.optimizer = *optimizer_,
                         .topology = topo_,
                         .model = config_,
                         .backend = ctx_.backend(),
                         .staging = checkpoint_staging_,
                         .loop = loop_state(),
                         .consumed_train_samples = consumed_train_samples(),
                         .partition_unit = o_.reduce_bucket_size,
                         .seed = o_.seed,
                         .keep_last = o_.keep_last,
                         .settings = training_settings(o_, global_batch_)};
}

std::string Trainer::save_checkpoint(const std::string& dir, const SaveHooks& hooks) {
  return zt::save_checkpoint(dir, checkpoint_state(), hooks);
}

int Trainer::load_checkpoint(const std::string& dir, LoadAccounting* accounting) {
  const LoopState loop = zt::load_checkpoint(dir, checkpoint_state(), accounting);
  restore_loop_state(loop);
  return loop.iteration;
}

void Trainer::restore_loop_state(const LoopState& s) {
  iteration_ = s.iteration;
  consumed_valid_ = s.consumed_valid;
  scaler_.restore(s.scaler);
}

StepMetrics Trainer::train_step() {
  using Clock = std::chrono::steady_clock;
  pool_.reset_peaks();
  if (&ctx_.host() != &pool_) ctx_.host().reset_peaks();
  meter_.begin_step();
  const auto t0 = Clock::now();
  const int mb = o_.micro_batch_size, T = o_.seq_length;
  const double scale = scaler_.scale();
  // d(loss)/d(token loss): the loss is the mean over every token of the global batch.
  float dloss = static_cast<float>(scale / (static_cast<double>(global_batch_) * T));
  if (hooks_.loss_gradient) dloss = hooks_.loss_gradient(iteration_ + 1, dloss);
  auto* tokens = static_cast<int32_t*>(batch_.data());
  int32_t* targets = tokens + mb * T;
  optimizer_->zero_grad();
  double loss = 0, busy_ms = 0, schedule_ms = 0;
  const int64_t base = int64_t{iteration_} * global_batch_;
  if (pipeline_) {
    optimizer_->begin_microbatch(true);  // reduced at the step (overlap is off with a pipeline)
    const auto r = pipeline_->train(
        *optimizer_,
        [&](int m, int32_t* dst) {
          load_batch_into(*data_.train, first_sample(base, m), dst);
          if (m == accumulation_ / 2) mid_step();  // in the middle of the schedule
        },
        dloss,
        [&](int m) {
          return DropoutSeeds{static_cast<uint64_t>(o_.seed), first_sample(base, m)};
        });
    mid_step();
    optimizer_->tie_grads();
    loss = r.loss;
    busy_ms = r.busy_ms;
    schedule_ms = r.total_ms;
  }
  for (int m = 0; !pipeline_ && m < accumulation_; ++m) {
    const int64_t first = first_sample(base, m);
    load_batch(*data_.train, first);
    optimizer_->begin_microbatch(m == accumulation_ - 1);
    loss += model_->forward_backward(tokens, targets, dloss, *optimizer_, *activations_,
                                     DropoutSeeds{static_cast<uint64_t>(o_.seed), first});
    mid_step();
  }
  loss = pipeline_loss(loss / accumulation_);
  ++iteration_;
  StepMetrics m;
  m.iteration = iteration_;
  m.train_iters = o_.train_iters;
  m.lr = schedule_.at(iteration_);
  const StepResult r = optimizer_->step(m.lr, scale);
  scaler_.update(r.skipped);
  ctx_.backend().synchronize();  // the step's device work is part of its time
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const double tokens_per_step = static_cast<double>(global_batch_) * T;
  m.consumed_samples = int64_t{iteration_} * global_batch_;
  const GradSyncTiming sync = optimizer_->grad_sync_timing();
  m.comm_hidden_fraction = sync.hidden_fraction;
  m.comm_exposed_ms = sync.exposed_ms;
  const comm::CommSnapshot c = meter_.end_step();
  m.comm_bytes_dp = c.group(comm::GroupKind::Dp).bytes;
  m.comm_bytes_tp = c.group(comm::GroupKind::Tp).bytes;
  m.comm_bytes_pp = c.group(comm::GroupKind::Pp).bytes;
  // Every data-parallel rank saw different samples: the step's loss is their mean.
  double l[2] = {loss, busy_ms};
  reducer_.mean(l);
  loss = l[0];
  busy_ms = l[1];
  if (pipeline_) reducer_.max(std::span<double>(&schedule_ms, 1));
  // The pipeline's idle share as pipeline::simulate defines it: 1 - Σ stage compute / (P ·
  // the schedule's span), the span the longest stage's (every stage starts the step together).
  m.pipeline_bubble = schedule_ms > 0 ? 1.0 - busy_ms / schedule_ms : 0;
  m.lm_loss = loss;
  m.grad_norm = r.grad_norm;
  m.loss_scale = scale;
  m.skipped = r.skipped;
  m.elapsed_ms = ms;
  m.tokens_per_s = tokens_per_step / (ms / 1e3);
  m.tflops_per_rank = config_.flops_per_token() * tokens_per_step / world_ / (ms / 1e3) / 1e12;
  m.num_parameters = config_.num_parameters();
  // Memory is reported as the maximum over ranks: the rank that runs out first.
  double mem[kNumMemCategories + 2];
  for (size_t c = 0; c < kNumMemCategories; ++c)
    mem[c] = static_cast<double>(pool_.counters().peak[c]);
  mem[kNumMemCategories] = static_cast<double>(pool_.total_peak());
  // Offloaded checkpoints live in the host pool where that is a pool of its own (CUDA): they are
  // part of what the run keeps, so they are reported with the rest (the device total excludes
  // them).
  if (&ctx_.host() != &pool_) {
    constexpr auto kHost = static_cast<size_t>(MemCategory::HostCheckpoints);
    mem[kHost] += static_cast<double>(ctx_.host().counters().peak[kHost]);
  }
  mem[kNumMemCategories + 1] = 1.0 - pool_.fragmentation();  // max of this = worst rank
  reducer_.max(mem);
  m.memory_fragmentation = 1.0 - mem[kNumMemCategories + 1];
  for (size_t c = 0; c < kNumMemCategories; ++c) m.memory_peak[c] = static_cast<size_t>(mem[c]);
  m.memory_total_peak = static_cast<size_t>(mem[kNumMemCategories]);
  return m;
}

double Trainer::evaluate() {
  ZT_CHECK(data_.valid != nullptr, "evaluate() without validation data");
  const int mb = o_.micro_batch_size, T = o_.seq_length;
  auto* tokens = static_cast<int32_t*>(batch_.data());
  int32_t* targets = tokens + mb * T;
  double loss = 0;
  for (int it = 0; it < o_.eval_iters; ++it) {
    if (pipeline_) {
      optimizer_->zero_grad();
      loss += pipeline_
                  ->evaluate(*optimizer_,
                             [&](int m, int32_t* dst) {
                               load_batch_into(*data_.valid, first_sample(consumed_valid_, m), dst);
                             })
                  .loss;
      consumed_valid_ += global_batch_;
      continue;
    }
    // The training step's sample order, on the validation stream.
    for (int m = 0; m < accumulation_; ++m) {
      const int64_t first = first_sample(consumed_valid_, m);
      load_batch(*data_.valid, first);
      // No gradient is made here; zero_grad restarts ZeRO stage 3's recorded acquire order at
      // the step's beginning, so each forward-only pass follows it and prefetching stays valid.
      optimizer_->zero_grad();
      loss += model_->forward_loss(tokens, targets, *optimizer_, *activations_);
    }
    consumed_valid_ += global_batch_;
  }
  // Every micro-batch has the same token count: the mean of their means is the token mean.
  loss = pipeline_loss(loss / (static_cast<double>(o_.eval_iters) * accumulation_));
  double l[1] = {loss};
  reducer_.mean(l);
  loss = l[0];
  return loss;
}

void Trainer::report_validation(bool print) {
  const double loss = evaluate();
  validation_.emplace_back(iteration_, loss);
  metrics_.write_validation(iteration_, loss);
  if (print) log::line(MetricsWriter::validation_line(iteration_, loss));
}

const std::vector<StepMetrics>& Trainer::run(bool print) {
  if (print)
    log::info(
        "zerotron: {} parameters, {} layers, hidden {}, {} heads, seq {}, vocab {} (padded {}), "
        "{} precision, global batch {} = micro {} x data-parallel {} x accumulation {}; "
        "tensor-parallel {}{}, pipeline {}{}, ZeRO stage {}, activations: {}",
        config_.num_parameters(), config_.num_layers, config_.hidden, config_.heads,
        config_.seq_length, config_.vocab_size, config_.padded_vocab_size,
        dtype_name(working_dtype(o_)), global_batch_, o_.micro_batch_size, dp_, accumulation_,
        layout_.tp_size(), config_.sequence_parallel && layout_.tp_size() > 1 ? " (sequence)" : "",
        pp_,
        pp_ == 1 ? std::string()
        : model_chunks(o_) > 1
            ? fmt::format(" ({} chunks per stage, interleaved)", model_chunks(o_))
            : std::string(" (1F1B)"),
        o_.zero_stage,
        !o_.checkpoint_activations ? "all kept"
        : o_.cpu_checkpointing     ? "checkpointed, partitioned, in host memory"
        : o_.partition_activations ? "checkpointed, partitioned (Pa)"
                                   : "checkpointed");
  ExitConditions exits(o_, reducer_);
  std::string stop;
  while (iteration_ < o_.train_iters && stop.empty()) {
    const StepMetrics m = train_step();
    metrics_.write(m);
    const bool stuck = !scaler_.stuck().empty();
    if (print && (m.iteration % o_.log_interval == 0 || m.iteration == o_.train_iters || stuck))
      log::line(MetricsWriter::console_line(m));
    history_.push_back(m);
    if (stuck)
      throw RunStopped(
          fmt::format("{}; stopped at iteration {}: lower --lr, check the data, or use --bf16",
                      scaler_.stuck(), m.iteration));
    if (data_.valid && m.iteration % o_.eval_interval == 0) report_validation(print);
    if (!o_.save.empty() && o_.save_interval > 0 && m.iteration % o_.save_interval == 0 &&
        m.iteration != o_.train_iters)
      save(print);
    stop = exits.reason_to_stop(m.iteration);
  }
  if (!stop.empty()) {
    // A clean stop (often a scheduler's SIGTERM before its time limit): the checkpoint comes
    // before anything else that could run out the clock.
    if (print) log::info("zerotron: stopping at iteration {}: {}", iteration_, stop);
    if (!o_.save.empty() && saved_iteration_ != iteration_) save(print);
    return history_;
  }
  if (data_.valid && (validation_.empty() || validation_.back().first != iteration_))
    report_validation(print);
  if (!o_.save.empty() && (saved_iteration_ != iteration_)) save(print);
  return history_;
}

}  // namespace zt
