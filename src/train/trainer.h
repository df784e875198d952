#pragma once
// Trainer: builds the model, its optimizer and activation store from validated options, then
// runs the step loop (micro-batches with gradient accumulation, optimizer step, loss scaling,
// logging).
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "src/checkpoint/checkpoint.h"
#include "src/checkpoint/directory.h"
#include "src/checkpoint/host_staging.h"
#include "src/checkpoint/saver.h"
#include "src/comm/comm_stats.h"
#include "src/comm/scalar_reducer.h"
#include "src/comm/topology.h"
#include "src/config/derive.h"
#include "src/config/options.h"
#include "src/core/memory_pool.h"
#include "src/data/sample_skips.h"
#include "src/generate/text_sample.h"
#include "src/model/activation_store.h"
#include "src/model/gpt.h"
#include "src/pipeline/micro_batch_runner.h"
#include "src/train/metrics.h"
#include "src/train/train_data.h"
#include "src/train/trainer_hooks.h"
#include "src/zero/activation_checkpointer.h"
#include "src/zero/divergence_check.h"
#include "src/zero/loss_scaler.h"
#include "src/zero/lr_schedule.h"
#include "src/zero/zero_optimizer.h"

namespace zt {

class Trainer {
 public:
  // `topology`: the process groups (comm::SelfWorld's for one process without MPI); it must
  // outlive the Trainer. `data`: the streams from open_train_data(options); left empty,
  // --mock-data's stream is made here (a --data-path run must pass its opened data). Everything
  // is allocated from ctx's pools and computed on its backend (a plain host MemoryPool: the CPU
  // backend).
  Trainer(const TrainOptions& options, const DeviceContext& ctx, comm::Topology& topology,
          TrainData data = {});
  // Replaces the hooks the run calls (none at construction).
  void set_hooks(TrainerHooks hooks) { hooks_ = std::move(hooks); }
  // Runs --train-iters steps (printing the console log when `print`), evaluating every
  // --eval-interval steps and at the end when there is validation data. Returns every step's
  // metrics.
  const std::vector<StepMetrics>& run(bool print = true);
  StepMetrics train_step();
  // Mean loss over --eval-iters global batches of the validation stream (every rank its slice,
  // averaged over ranks, dropout off), continuing where the previous evaluation stopped, as
  // Megatron's persistent validation iterator does.
  double evaluate();
  // Mean loss over --eval-iters global batches of the test split from its first sample.
  double evaluate_test();
  bool has_test_data() const { return data_.test != nullptr; }

  // The stream positions a checkpoint must save to resume exactly.
  int64_t consumed_train_samples() const { return int64_t{iteration_} * global_batch_; }
  int64_t consumed_valid_samples() const { return consumed_valid_; }
  // Every evaluation so far: (iteration, validation loss).
  const std::vector<std::pair<int, double>>& validation_history() const { return validation_; }

  ZeroOptimizer& optimizer() { return *optimizer_; }
  Gpt& model() { return *model_; }
  // What runs the step's micro-batches: the pipeline stage's schedule, or with one stage each
  // micro-batch's whole forward and backward.
  pipeline::MicroBatchRunner* pipeline_runner() { return runner_.get(); }
  const TrainOptions& options() const { return o_; }
  const GptConfig& config() const { return config_; }
  comm::Topology& topology() const { return topo_; }
  const DeviceContext& context() const { return ctx_; }
  // The loop state a checkpoint carries besides the model states.
  using LoopState = zt::LoopState;
  LoopState loop_state() const {
    return {iteration_,    consumed_valid_, scaler_.state(), lr_steps_,
            dropout_seed_, skips_,          token_ids_};
  }
  void restore_loop_state(const LoopState& s);
  // What a checkpoint of this run holds, as save_checkpoint and load_checkpoint take it.
  CheckpointState checkpoint_state();
  // Collective: a checkpoint of this step into `dir`; returns the iteration directory written.
  std::string save_checkpoint(const std::string& dir, const SaveHooks& hooks = {});
  // Collective: DIR/latest's states and loop state into this run (what the options' --finetune,
  // --no-load-optim and --no-load-rng leave, or `scope`); returns its iteration.
  int load_checkpoint(const std::string& dir, LoadAccounting* accounting = nullptr,
                      std::optional<LoadScope> scope = std::nullopt);
  // Writes a checkpoint of this step to --save (with --async-save: snapshots it and writes it
  // in the background).
  void save(bool print);
  // Collective: an --async-save write still under way is waited for and published (nothing
  // otherwise). The run waits at each save, a stop and the end; call it before anything that
  // reads --save (a rewind to `latest`).
  void wait_for_pending_save(bool print = true);

 private:
  TrainOptions o_;
  DeviceContext ctx_;
  MemoryPool& pool_;
  comm::Topology& topo_;
  comm::StepCommMeter meter_;
  // Bookkeeping scalars live on the host: the host world and host memory.
  comm::ScalarReducer reducer_;
  int dp_ = 1, dp_rank_ = 0, world_ = 1, pp_ = 1, pp_rank_ = 0;
  DerivedConfig derived_;  // what the options mean on this layout (derive_validated)
  GptConfig config_;
  ParamLayout layout_;
  int accumulation_ = 1;
  int64_t global_batch_ = 0;
  LrSchedule schedule_;
  LossScaler scaler_;
  TrainData data_;
  int64_t consumed_valid_ = 0;
  std::vector<std::pair<int, double>> validation_;
  std::unique_ptr<ZeroOptimizer> optimizer_;
  std::unique_ptr<ActivationStore> activations_;
  std::unique_ptr<Gpt> model_;
  Buffer batch_;  // tokens and targets of one micro-batch (int32), in the backend's memory
  std::unique_ptr<pipeline::MicroBatchRunner> runner_;
  // Host staging where the host cannot write the device (none on the CPU): the micro-batch as
  // the data stream writes it, and the checkpoint's.
  Buffer batch_host_;
  // Context parallelism: whole samples (tokens, targets; host) before this rank keeps its tokens.
  std::vector<int32_t> whole_samples_;
  HostStaging checkpoint_staging_;
  // Fills `dst` (device memory, tokens then targets; through batch_host_ when staging) with the
  // samples at logical positions [first, first + micro batch) of `source`, past `skips`.
  void load_batch_into(const BatchSource& source, const data::SampleSkips& skips, int64_t first,
                       int32_t* dst);
  // Training-stream positions left out: --skip-train-samples, the loaded checkpoint's, rewinds'.
  data::SampleSkips skips_, flag_skips_;
  nlohmann::json token_ids_;  // a loaded import's special tokens, saved again
  // Whether a fault hook poisons one of the samples this rank reads in the step from `base`.
  bool step_poisoned(int64_t base) const;
  // The first sample of micro-step m of the batch starting at sample `base` on this rank.
  int64_t first_sample(int64_t base, int m) const;
  // A mean loss every rank can report: the last pipeline stage's (the others hold none).
  double pipeline_loss(double loss) const;
  ZeroConfig zero_config() const;

  MetricsWriter metrics_;
  std::unique_ptr<TextSample> sample_;  // --sample-interval
  std::vector<StepMetrics> history_;
  int iteration_ = 0;
  // Updates applied: the learning-rate schedule's position (skipped fp16 steps do not count).
  int lr_steps_ = 0;
  // Dropout's seed: --seed, or a loaded checkpoint's, whose stream the run continues.
  int64_t dropout_seed_ = 0;
  int saved_iteration_ = -1;
  // This rank's loss of the last step before the mean over ranks (a divergence's report).
  double local_loss_ = 0;
  DivergenceCheck divergence_;
  int rewinds_ = 0;
  // After step `m` diverged (`cause`): stops the run, naming the ranks that saw it first
  // (RunStopped), or with --on-divergence rewind goes back to --save's newest checkpoint.
  // Collective.
  void on_divergence(const std::string& cause);
  // One line: the iteration, `cause` and the ranks where the loss or a gradient shard went
  // non-finite (with the first such parameter of `reporter`, the rank that prints it).
  std::string divergence_report(const std::string& cause, int& reporter);
  // Reloads --save's newest checkpoint and leaves out the training samples up to the divergence.
  void rewind(const std::string& report, int reporter);
  // Saves at the run's save points; a refused save (non-finite model) is a divergence. False when
  // it rewound instead.
  bool save_or_rewind(bool print);
  std::optional<CheckpointSaver> saver_;  // made once the optimizer exists
  // A published save: its metrics record and (when `print`) its console line.
  void report_save(const std::optional<SaveRecord>& r, bool print);
  TrainerHooks hooks_;
  // Calls hooks_.mid_step for the step under way.
  void mid_step();
  std::vector<double> moe_values_;  // the MoE layers' routing totals, reduced over the ranks
  void report_validation(bool print);
  // The mean loss of --eval-iters global batches of `source` from sample `consumed` (advanced).
  double evaluate_on(const BatchSource& source, int64_t& consumed);
};

}  // namespace zt
