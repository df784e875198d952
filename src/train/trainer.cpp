#include "src/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>

#include "src/checkpoint/checkpoint.h"
#include "src/comm/rank_flags.h"
#include "src/config/run_summary.h"
#include "src/config/training_settings.h"
#include "src/core/log.h"
#include "src/core/progress.h"
#include "src/data/sample_check.h"
#include "src/train/exit_conditions.h"

namespace zt {
Trainer::Trainer(const TrainOptions& options, const DeviceContext& ctx, comm::Topology& topology,
                 TrainData data)
    : o_(options),
      ctx_(ctx),
      pool_(ctx.pool()),
      topo_(topology),
      meter_(topology.world().stats()),
      // The memory report, or the MoE layers' routing statistics where they are more.
      reducer_(
          topology.host_world(), ctx.host(),
          std::max<size_t>(kNumMemCategories + 2, moe_metric_values(gpt_config_from(options)))),
      derived_(derive_validated(options, topology.dp_size())),
      config_(derived_.model),
      layout_(
          ParamLayout::gpt(config_, topology.tp_size(), topology.tp_rank(),
                           PipelinePart{topology.pp_size(), topology.pp_rank(), derived_.chunks,
                                        derived_.first_stage_layers, derived_.last_stage_layers},
                           ExpertPart{topology.ep() != nullptr ? topology.ep()->rank() : 0})),
      schedule_{o_.lr,
                o_.min_lr,
                o_.lr_warmup_iters,
                derived_.lr_decay_iters,
                o_.lr_decay_style,
                o_.lr_warmup_style},
      scaler_(derived_.scaler),
      data_(std::move(data)),
      // Metrics are reduced over ranks; rank 0 alone writes them.
      metrics_(topology.rank() == 0 ? o_.metrics_file : std::string(),
               topology.rank() == 0 ? o_.tensorboard_dir : std::string()),
      dropout_seed_(o_.seed),
      divergence_(!o_.no_check_for_nan_in_loss_and_grad, derived_.working == DType::F16,
                  o_.loss_spike_factor) {
  if (!o_.skip_train_samples.empty()) flag_skips_ = data::SampleSkips::parse(o_.skip_train_samples);
  skips_ = flag_skips_;
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
  global_batch_ = derived_.batch.global;
  accumulation_ = derived_.batch.accumulation;
  optimizer_ = std::make_unique<ZeroOptimizer>(layout_, derived_.working, derived_.adam, ctx_,
                                               static_cast<uint64_t>(o_.seed), zero_config());
  const pipeline::ScheduleShape shape{pp_, accumulation_, derived_.chunks};
  const ActivationSlots slots = pipeline::runner_slots(config_, shape, layout_.pipeline());
  if (derived_.checkpoint_activations) {
    CheckpointConfig cp = derived_.checkpoint;
    cp.tp = &topo_.tp();
    // On the CPU backend host memory is the same pool; the category tells them apart.
    activations_ = std::make_unique<ActivationCheckpointer>(ctx_, config_, o_.micro_batch_size,
                                                            layout_.tp_size(), cp, slots);
  } else {
    activations_ = std::make_unique<KeepAllActivations>(pool_, config_, o_.micro_batch_size,
                                                        layout_.tp_size(), slots);
  }
  model_ = std::make_unique<Gpt>(config_, layout_, o_.micro_batch_size, ctx_, &topo_.tp(),
                                 &topo_.cp(), topo_.ep());
  // A context rank reads whole samples and keeps its tokens of them (context_split.h).
  if (model_->dims().cp.active())
    whole_samples_.resize(static_cast<size_t>(2 * o_.micro_batch_size * o_.seq_length));
  const size_t batch_bytes = static_cast<size_t>(2 * o_.micro_batch_size * config_.local_seq()) * 4;
  batch_ = pool_.allocate(batch_bytes, MemCategory::Activations);
  runner_ = pipeline::make_runner(*model_, *activations_, &topo_.pp(), shape, ctx_,
                                  o_.micro_batch_size, static_cast<int32_t*>(batch_.data()));
  if (o_.sample_interval > 0) sample_ = std::make_unique<TextSample>(o_);
  saver_.emplace(ctx_, o_.async_save, *optimizer_, topo_.dp().rank());
  if (ctx_.needs_staging()) batch_host_ = ctx_.host().allocate(batch_bytes, MemCategory::Buffers);
  // Offloaded optimizer states reach a checkpoint file through host memory too.
  if (ctx_.needs_staging() || !optimizer_->states_resident())
    checkpoint_staging_ = HostStaging(ctx_);
}

ZeroConfig Trainer::zero_config() const {
  ZeroConfig zero = derived_.zero;
  zero.dp = &topo_.dp();
  zero.world = &topo_.host_world();
  zero.expert_dp = topo_.edp();
  zero.tp_rank = topo_.tp_rank();
  if (zero.cast_params)
    zero.held_params_elems = Gpt::held_params_elems(config_, layout_, zero.reduce_bucket_elems);
  // The hooks are set after construction: looked up at each call.
  zero.optimizer_tier.on_write_back = [this] {
    if (hooks_.optimizer_write_back) hooks_.optimizer_write_back(iteration_ + 1);
  };
  // derive() turned overlap_comm off: the tied embedding's sum comes first. An untied head has
  // nothing to sum between the stages.
  if (pp_ > 1 && !config_.untie_embeddings) {
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

void Trainer::load_batch_into(const BatchSource& source, const data::SampleSkips& skips,
                              int64_t first, int32_t* dst) {
  const int mb = o_.micro_batch_size, T = o_.seq_length;
  const ContextSplit& cp = model_->dims().cp;
  auto* local = batch_host_.data() ? static_cast<int32_t*>(batch_host_.data()) : dst;
  int32_t* tokens = cp.active() ? whole_samples_.data() : local;
  int32_t* targets = tokens + mb * T;
  for (int j = 0; j < mb; ++j) {
    const int64_t at = skips.physical(first + j);
    source.sample(at, tokens + j * T, targets + j * T);
    data::check_sample_ids(
        at, tokens + j * T, targets + j * T, T, config_.vocab_size,
        o_.data_path.empty() ? "the sample stream" : "--data-path '" + o_.data_path + "'");
  }
  if (cp.active()) {
    keep_local_tokens(cp, tokens, local, mb);
    keep_local_tokens(cp, targets, local + int64_t{mb} * cp.local(), mb);
  }
  if (batch_host_.data() != nullptr)
    ctx_.backend().copy_to_device(dst, batch_host_.data(), batch_host_.bytes());
}

bool Trainer::step_poisoned(int64_t base) const {
  if (!hooks_.poisoned) return false;
  for (int m = 0; m < accumulation_; ++m)
    for (int j = 0; j < o_.micro_batch_size; ++j)
      if (hooks_.poisoned(skips_.physical(first_sample(base, m) + j))) return true;
  return false;
}

int64_t Trainer::first_sample(int64_t base, int m) const {
  // Megatron's order: micro-step m takes mb·dp consecutive samples, rank r the r-th slice.
  return base + int64_t{m} * o_.micro_batch_size * dp_ + int64_t{dp_rank_} * o_.micro_batch_size;
}

double Trainer::pipeline_loss(double loss) const {
  // Averaged over every rank below, where only the last stage's ranks hold a loss: they count
  // pp times (one stage: every rank, once).
  return layout_.pipeline().last() ? loss * pp_ : 0.0;
}

void Trainer::mid_step() {
  if (hooks_.mid_step) hooks_.mid_step(iteration_ + 1);
}

void Trainer::save(bool print) {
  SaveHooks hooks = hooks_.save ? hooks_.save(iteration_) : SaveHooks{};
  saved_iteration_ = iteration_;
  const bool async = saver_->async();  // then the write runs on the saver's thread, unreported
  // Rank 0's shard stands for the save's progress (every writing rank's is about as long).
  Progress progress(fmt::format("saving checkpoint at iteration {} to {}", iteration_, o_.save), 0,
                    print && !async);
  if (!async)
    hooks.progress = [&, inner = hooks.progress](uint64_t done, uint64_t total) {
      if (inner) inner(done, total);
      progress.set_total(total);
      progress.add(done - progress.done());
    };
  const std::optional<SaveRecord> r = saver_->save(o_.save, checkpoint_state(), hooks);
  if (print && async)
    log::info(
        " writing checkpoint at iteration {} to {} in the background (the loop waited {:.2f} s)",
        iteration_, o_.save, progress.seconds());
  if (print && !async)
    log::info(" saved checkpoint at iteration {} to {} ({:.2f} s, rank 0: {})", iteration_,
              r->where, progress.seconds(), progress.status());
  report_save(r, print && async);
}

void Trainer::wait_for_pending_save(bool print) {
  optimizer_->wait_for_update();  // the run's end: a failed update of its last step is reported
  report_save(saver_->wait(topo_.host_world()), print);
}

void Trainer::report_save(const std::optional<SaveRecord>& r, bool print) {
  if (!r) return;
  metrics_.write_save(r->iteration, r->async, r->stall_s, r->write_s);
  if (print)
    log::info(
        " saved checkpoint at iteration {} to {} (background write {:.2f} s, the loop waited "
        "{:.2f} s)",
        r->iteration, r->where, r->write_s, r->stall_s);
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
                         .seed = dropout_seed_,
                         .keep_last = o_.keep_last,
                         .settings = training_settings(o_, global_batch_),
                         .read_progress = {}};
}

std::string Trainer::save_checkpoint(const std::string& dir, const SaveHooks& hooks) {
  return zt::save_checkpoint(dir, checkpoint_state(), hooks);
}

int Trainer::load_checkpoint(const std::string& dir, LoadAccounting* accounting,
                             std::optional<LoadScope> given) {
  // Megatron's meanings: --finetune takes the weights alone; --no-load-optim leaves the
  // optimizer, its schedule and the loss scale fresh; --no-load-rng keeps --seed's dropout.
  const LoadScope scope = given.value_or(LoadScope{.optimizer = !o_.finetune && !o_.no_load_optim,
                                                   .progress = !o_.finetune,
                                                   .rng = !o_.finetune && !o_.no_load_rng,
                                                   .iteration = checkpoint_step(o_)});
  Progress progress(fmt::format("loading checkpoint {} (rank 0's model states)", dir), 0);
  CheckpointState state = checkpoint_state();
  state.read_progress = [&](uint64_t bytes) { progress.add(bytes); };
  LoopState loop = zt::load_checkpoint(dir, state, accounting, scope);
  if (!loop.seed) loop.seed = o_.seed;
  if (*loop.seed != o_.seed && topo_.rank() == 0)
    log::info(
        "zerotron: warning: dropout continues the checkpoint's random stream (seed {}), not "
        "--seed {}'s (--no-load-rng for this run's)",
        *loop.seed, o_.seed);
  restore_loop_state(loop);
  return loop.iteration;
}

void Trainer::restore_loop_state(const LoopState& s) {
  iteration_ = s.iteration;
  consumed_valid_ = s.consumed_valid;
  scaler_.restore(s.scaler);
  lr_steps_ = s.lr_steps;
  if (s.seed) dropout_seed_ = *s.seed;
  token_ids_ = s.token_ids;
  // A range added by --skip-train-samples before the loaded position would move every sample
  // the checkpoint's run has already trained on.
  data::SampleSkips skips = s.skipped_train_samples;
  skips.add(flag_skips_);
  const int64_t at = int64_t{iteration_} * global_batch_;
  ZT_REQUIRE(skips.physical(at) == s.skipped_train_samples.physical(at),
             "--skip-train-samples {} leaves out samples before the checkpoint's position in the "
             "training stream (iteration {}, stream position {}): only later ones can be skipped",
             o_.skip_train_samples, iteration_, s.skipped_train_samples.physical(at));
  skips_ = std::move(skips);
}

StepMetrics Trainer::train_step() {
  using Clock = std::chrono::steady_clock;
  pool_.reset_peaks();
  if (&ctx_.host() != &pool_) ctx_.host().reset_peaks();
  meter_.begin_step();
  const auto t0 = Clock::now();
  const int T = o_.seq_length;
  const double scale = scaler_.scale();
  // d(loss)/d(token loss): the loss is the mean over every token of the global batch.
  float dloss = static_cast<float>(scale / (static_cast<double>(global_batch_) * T));
  if (hooks_.loss_gradient) dloss = hooks_.loss_gradient(iteration_ + 1, dloss);
  optimizer_->zero_grad();
  const int64_t base = int64_t{iteration_} * global_batch_;
  if (step_poisoned(base)) dloss = std::numeric_limits<float>::quiet_NaN();
  const auto passes = runner_->train(
      *optimizer_,
      [&](int m, int32_t* dst) {
        load_batch_into(*data_.train, skips_, first_sample(base, m), dst);
        if (m == accumulation_ / 2) mid_step();  // in the middle of the step
      },
      dloss,
      [&](int m) {
        return DropoutSeeds{static_cast<uint64_t>(dropout_seed_), first_sample(base, m)};
      },
      [&](bool last) { optimizer_->begin_microbatch(last); });
  mid_step();
  optimizer_->tie_grads();  // the tied embedding's copies (first and last pipeline stage) summed
  double loss = pipeline_loss(passes.loss / accumulation_);
  local_loss_ = loss;
  ++iteration_;
  StepMetrics m;
  m.iteration = iteration_;
  m.train_iters = o_.train_iters;
  m.lr = schedule_.at(lr_steps_ + 1);
  saver_->wait_for_snapshot();  // --async-save: the step changes what the snapshot copies
  const StepResult r = optimizer_->step(m.lr, scale);
  scaler_.update(r.skipped);
  if (!r.skipped) ++lr_steps_;   // Megatron steps its scheduler only on a successful update
  ctx_.backend().synchronize();  // the step's device work is part of its time
  // Read once the device has run the step (on CUDA they are events of the compute stream).
  double busy_ms = passes.busy.ms(), schedule_ms = passes.total.ms();
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const double tokens_per_step = static_cast<double>(global_batch_) * T;
  m.consumed_samples = int64_t{iteration_} * global_batch_;
  const GradSyncTiming sync = optimizer_->grad_sync_timing();
  m.comm_hidden_fraction = sync.hidden_fraction;
  m.comm_exposed_ms = sync.exposed_ms;
  const comm::CommSnapshot c = meter_.end_step();
  m.comm_bytes_dp = c.group(comm::GroupKind::Dp).bytes + c.group(comm::GroupKind::Edp).bytes;
  m.comm_bytes_tp = c.group(comm::GroupKind::Tp).bytes;
  m.comm_bytes_pp = c.group(comm::GroupKind::Pp).bytes;
  m.comm_bytes_cp = c.group(comm::GroupKind::Cp).bytes;
  m.comm_bytes_ep = c.group(comm::GroupKind::Ep).bytes;
  // Every data-parallel rank saw different samples: the step's loss is their mean.
  const bool pipelined = runner_->shape().stages > 1;
  double l[2] = {loss, busy_ms};
  reducer_.mean(l);
  loss = l[0];
  busy_ms = l[1];
  if (pipelined) reducer_.max(std::span<double>(&schedule_ms, 1));
  // The pipeline's idle share as pipeline::simulate defines it: 1 - Σ stage compute / (P ·
  // the schedule's span), the span the longest stage's (every stage starts the step together).
  // One stage waits on no neighbour: no bubble.
  m.pipeline_bubble = pipelined && schedule_ms > 0 ? 1.0 - busy_ms / schedule_ms : 0;
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
  peak_report(pool_, ctx_.host(), mem);
  reducer_.max(mem);
  m.memory_fragmentation = 1.0 - mem[kNumMemCategories + 1];
  for (size_t c = 0; c < kNumMemCategories; ++c) m.memory_peak[c] = static_cast<size_t>(mem[c]);
  m.memory_total_peak = static_cast<size_t>(mem[kNumMemCategories]);
  if (config_.moe()) {
    moe_values_.resize(moe_metric_values(config_));
    pack_moe_totals(model_->moe().totals, moe_values_);
    reducer_.sum(moe_values_);
    m.moe = MoeStepStats::of(config_, moe_values_);
  }
  return m;
}

double Trainer::evaluate() {
  ZT_CHECK(data_.valid != nullptr, "evaluate() without validation data");
  return evaluate_on(*data_.valid, consumed_valid_);
}

double Trainer::evaluate_test() {
  ZT_CHECK(data_.test != nullptr, "evaluate_test() without test data");
  int64_t first = 0;
  return evaluate_on(*data_.test, first);
}

double Trainer::evaluate_on(const BatchSource& source, int64_t& consumed) {
  double loss = 0;
  for (int it = 0; it < o_.eval_iters; ++it) {
    // The training step's sample order, on the validation stream. No gradient is made here;
    // zero_grad restarts ZeRO stage 3's recorded acquire order at the step's beginning, so each
    // forward-only run follows it and prefetching stays valid.
    runner_->evaluate(
        *optimizer_,
        [&](int m, int32_t* dst) {
          static const data::SampleSkips kNone;
          load_batch_into(source, kNone, first_sample(consumed, m), dst);
        },
        [&](bool) { optimizer_->zero_grad(); }, loss);
    consumed += global_batch_;
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
  if (print) log::info("{}", run_summary(o_, derived_));
  ExitConditions exits(o_, reducer_);
  std::string stop;
  RunClock clock;
  for (;;) {
    while (iteration_ < o_.train_iters && stop.empty()) {
      StepMetrics m = train_step();
      m.elapsed_s = clock.step(m.elapsed_ms);
      m.eta_s = clock.eta(o_.train_iters - m.iteration);
      metrics_.write(m);
      const bool stuck = !scaler_.stuck().empty();
      const std::string diverged = divergence_.cause(m.lm_loss, m.grad_norm);
      if (print && (m.iteration % o_.log_interval == 0 || m.iteration == o_.train_iters || stuck ||
                    !diverged.empty()))
        log::line(MetricsWriter::console_line(m));
      history_.push_back(m);
      if (!diverged.empty()) {
        on_divergence(diverged);  // stops the run, or rewinds it to a checkpoint
        continue;
      }
      if (stuck)
        throw RunStopped(
            fmt::format("{}; stopped at iteration {}: lower --lr, check the data, or use --bf16",
                        scaler_.stuck(), m.iteration));
      if (data_.valid && m.iteration % o_.eval_interval == 0) report_validation(print);
      if (sample_ && m.iteration % o_.sample_interval == 0) {
        // zero_grad restarts ZeRO stage 3's recorded acquire order before each forward, as for
        // evaluation; there is no gradient to keep between steps.
        const std::string text = sample_->run(config_, layout_, *optimizer_, ctx_, &topo_.tp(),
                                              [&] { optimizer_->zero_grad(); });
        if (print) log::info("zerotron: sample at iteration {}: {}", m.iteration, text);
      }
      if (!o_.save.empty() && o_.save_interval > 0 && m.iteration % o_.save_interval == 0 &&
          m.iteration != o_.train_iters && !save_or_rewind(print))
        continue;
      stop = exits.reason_to_stop(m.iteration);
      if (saver_->pending()) report_save(saver_->finish_if_written(topo_.host_world()), print);
    }
    if (!stop.empty()) {
      // A clean stop (often a scheduler's SIGTERM before its time limit): the checkpoint comes
      // before anything else that could run out the clock.
      if (print) log::info("zerotron: stopping at iteration {}: {}", iteration_, stop);
      if (!o_.save.empty() && saved_iteration_ != iteration_) save(print);
      wait_for_pending_save(print);
      return history_;
    }
    if (data_.valid && (validation_.empty() || validation_.back().first != iteration_))
      report_validation(print);
    if (data_.test) {  // Megatron's evaluation of the test split, once at the end
      const double loss = evaluate_test();
      metrics_.write_test(iteration_, loss);
      if (print) log::line(MetricsWriter::test_line(iteration_, loss));
    }
    if (!o_.save.empty() && saved_iteration_ != iteration_ && !save_or_rewind(print))
      continue;  // rewound: train on from the checkpoint
    wait_for_pending_save(print);
    return history_;
  }
}

bool Trainer::save_or_rewind(bool print) {
  try {
    save(print);
    return true;
  } catch (const Diverged& e) {
    if (o_.on_divergence != "rewind") throw;
    rewind(fmt::format("iteration {}: {}", iteration_, e.what()), e.reporter());
    return false;
  }
}

std::string Trainer::divergence_report(const std::string& cause, int& reporter) {
  comm::Communicator& world = topo_.host_world();
  // Only the last pipeline stage holds a loss; a gradient shard counts where the norm counts it.
  const bool loss_bad = layout_.pipeline().last() && !std::isfinite(local_loss_);
  const bool grad_bad = !std::isfinite(optimizer_->local_grad_sumsq());
  const std::vector<int> loss_ranks = comm::ranks_where(world, loss_bad);
  const std::vector<int> grad_ranks = comm::ranks_where(world, grad_bad);
  reporter = !loss_ranks.empty()   ? loss_ranks.front()
             : !grad_ranks.empty() ? grad_ranks.front()
                                   : 0;
  std::string where;
  if (!loss_ranks.empty()) where = "non-finite loss on " + comm::ranks_text(loss_ranks);
  if (!grad_ranks.empty()) {
    where += (where.empty() ? "" : "; ") + std::string("non-finite gradients on ") +
             comm::ranks_text(grad_ranks);
    // The reporter alone prints the line: only its own shard is looked through.
    if (topo_.rank() == reporter && grad_bad) {
      const std::string name = optimizer_->first_nonfinite_grad();
      if (!name.empty())
        where += grad_ranks.size() == 1 ? fmt::format(", first in {}", name)
                                        : fmt::format(", on rank {} first in {}", reporter, name);
    }
  }
  return fmt::format("iteration {}: {}{}", iteration_, cause,
                     where.empty() ? "" : " (" + where + ")");
}

void Trainer::on_divergence(const std::string& cause) {
  int reporter = 0;
  const std::string report = divergence_report(cause, reporter);
  if (o_.on_divergence == "rewind") return rewind(report, reporter);
  wait_for_pending_save();  // an earlier step's write: finite, so `latest` may move to it
  throw RunStopped(report +
                       "; stopped without saving (--on-divergence rewind goes back to the newest "
                       "checkpoint, --no-check-for-nan-in-loss-and-grad goes on)",
                   reporter);
}

void Trainer::rewind(const std::string& report, int reporter) {
  namespace fs = std::filesystem;
  wait_for_pending_save();  // `latest` as every earlier save left it
  // Every rank must reach the checkpoint (--save is checked to be shared at start).
  const bool missing = !fs::exists(fs::path(o_.save) / "latest");
  if (!comm::ranks_where(topo_.host_world(), missing).empty())
    throw RunStopped(
        fmt::format("{}; no checkpoint in --save {} to rewind to: stopped", report, o_.save),
        reporter);
  if (rewinds_ >= o_.max_rewinds)
    throw RunStopped(fmt::format("{}; stopped after {} rewind(s) (--max-rewinds {})", report,
                                 rewinds_, o_.max_rewinds),
                     reporter);
  nlohmann::json meta;
  latest_iteration_dir(o_.save, meta);
  const int64_t saved = meta.value("iteration", int64_t{0});
  // The window ends with the diverging step's global batch, in whole global batches, and starts
  // no earlier than the checkpoint (what comes before it was trained on before the checkpoint).
  const int64_t G = global_batch_, end = int64_t{iteration_} * G;
  const int64_t begin = std::max(end - (o_.rewind_skip_samples + G - 1) / G * G, saved * G);
  data::SampleSkips left_out, skips = skips_;
  for (const data::SampleRange& r : skips_.physical_ranges(begin, end)) {
    left_out.add(r);
    skips.add(r);
  }
  const int diverged = iteration_;
  ++rewinds_;
  load_checkpoint(o_.save, nullptr, LoadScope{});
  // What this run skipped since the checkpoint stays skipped (the checkpoint lists only earlier
  // ranges).
  skips_ = std::move(skips);
  saved_iteration_ = iteration_;
  std::erase_if(validation_, [&](const auto& v) { return v.first > iteration_; });
  divergence_.reset();
  if (topo_.rank() == reporter)
    log::warning_line(fmt::format(
        "{}; rewound to iteration {} (rewind {} of at most {}), leaving out training samples {} "
        "(those of iterations {}-{})",
        report, iteration_, rewinds_, o_.max_rewinds, left_out.text(), begin / G + 1, diverged));
  metrics_.write_rewind(diverged, iteration_, left_out, rewinds_);
}

}  // namespace zt
