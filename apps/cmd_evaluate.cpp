// zerotron evaluate --load DIR --data-path ... [flags]: the loss and perplexity of a saved model
// on the validation split of --split (and on its test split when it has one), dropout off. The
// model, the batch, --eval-iters, the seed, the precision and the run's other settings come from
// the checkpoint unless a flag is given, and the validation samples are those of the run's last
// evaluation, so the loss is the one the run printed last. Any saved layout loads into the
// layout of this run (tp, pp, dp, ZeRO stage), reshaping as train's --load does. The flags are
// the training options evaluate reads (one options table); bad input is one line, exit 2.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "apps/commands.h"
#include "src/checkpoint/access_probe.h"
#include "src/checkpoint/checkpoint.h"
#include "src/checkpoint/meta.h"
#include "src/checkpoint/reader.h"
#include "src/comm/runtime.h"
#include "src/config/derive.h"
#include "src/config/options.h"
#include "src/config/saved_model.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/train/metrics.h"
#include "src/train/train_data.h"
#include "src/train/train_device.h"
#include "src/train/trainer.h"

namespace zt::app {

namespace {

// The training options evaluate reads: the checkpoint and the data, the model (taken from the
// checkpoint; a flag may shorten the sequence or must agree), the batch and the precision (the
// checkpoint's by default), the layout it runs under and where it reports.
const std::vector<std::string_view>& evaluate_flags() {
  static constexpr std::string_view kFlags =
      "load ckpt-step data-path split tokenizer-type vocab-file merge-file tokenizer-model "
      "eval-iters "
      "micro-batch-size global-batch-size seed num-layers hidden-size num-attention-heads "
      "seq-length vocab-size make-vocab-size-divisible-by position-embedding-type rotary-base "
      "normalization norm-epsilon swiglu ffn-hidden-size group-query-attention num-query-groups "
      "untie-embeddings-and-output-weights disable-bias-linear max-position-embeddings fp16 bf16 "
      "tf32 tensor-model-parallel-size pipeline-model-parallel-size "
      "num-layers-per-virtual-pipeline-stage decoder-first-pipeline-num-layers "
      "decoder-last-pipeline-num-layers sequence-parallel zero-stage allgather-bucket-size "
      "prefetch-bucket-size max-live-parameters reduce-bucket-size device device-memory "
      "comm-timeout tp-within-node metrics-file tensorboard-dir config";
  static const std::vector<std::string_view> flags = [] {
    std::vector<std::string_view> names;
    for (size_t at = 0; at < kFlags.size();) {
      const size_t end = std::min(kFlags.find(' ', at), kFlags.size());
      names.push_back(kFlags.substr(at, end - at));
      at = end + 1;
    }
    return names;
  }();
  return flags;
}

// The run's settings (meta.json "settings": the batch, --eval-iters, the schedule, the
// tokenizer), its seed and its precision, each where no flag gives it: the numbers are the run's
// and the load has nothing to warn about.
void take_saved_settings(const nlohmann::json& meta, const TrainFlags& flags, TrainOptions& o) {
  if (const auto s = meta.find("settings"); s != meta.end() && s->is_object())
    for (const auto& [key, value] : s->items())
      if (!flags.has(key) && (value.is_string() || value.is_number()))
        set_train_option(key, value.is_string() ? value.get<std::string>() : value.dump(), o);
  if (!flags.has("seed") && meta.contains("seed") && meta["seed"].is_number_integer())
    o.seed = meta["seed"].get<int64_t>();
  const auto precision = meta["layout"].find("precision");
  if (!flags.has("bf16") && !flags.has("fp16") && precision != meta["layout"].end()) {
    o.bf16 = *precision == "bf16";
    o.fp16 = *precision == "fp16";
  }
}

}  // namespace

int evaluate(Args args) {
  int argc = 0;
  char** argv = nullptr;
  comm::MpiRuntime rt(argc, argv);
  return rt.run_guarded([&] {
    TrainOptions o;
    TrainData data;
    bool help = false;
    int64_t iteration = 0;
    const int verdict = rt.agree_on_input([&] {
      TrainFlags flags = parse_command_flags("evaluate", args, evaluate_flags());
      help = flags.help;
      if (help) return;
      o = flags.options;
      rt.set_comm_timeout(o.comm_timeout);
      ZT_REQUIRE(!o.load.empty(), "evaluate: --load DIR is required (a checkpoint directory)");
      ZT_REQUIRE(!o.data_path.empty(), "evaluate: --data-path is required (the data to score)");
      check_load_readable(o.load);
      nlohmann::json meta;
      const std::string dir = checkpoint_iteration_dir(o.load, checkpoint_step(o), meta);
      const std::string where = dir + "/meta.json";
      // Every shard file is opened (and refused unless a regular file) before allocating.
      const GptConfig saved = SavedCheckpoint(dir, meta).model();
      iteration = meta.at("iteration").get<int64_t>();
      take_saved_model(saved, flags.given, where, o);
      take_saved_settings(meta, flags, o);
      ZT_REQUIRE(o.eval_iters > 0, "evaluate: --eval-iters must be positive");
      derive(o, rt.world_size());  // every check of the options and the layout
      data = open_train_data(o);
      validate_tensor_parallel(gpt_config_from(o), o.tensor_model_parallel_size);
    });
    if (verdict != 0) return verdict;
    if (help) {
      if (rt.rank() == 0)
        std::fputs((train_options_help("evaluate", evaluate_flags()) +
                    "\nThe model, --micro-batch-size, --global-batch-size, --eval-iters, --seed, "
                    "the precision and the tokenizer files are the checkpoint's unless given; the "
                    "validation samples are those of the run's last evaluation.\n")
                       .c_str(),
                   stdout);
      return 0;
    }
    std::optional<TrainDevice> device;
    std::optional<Trainer> trainer;
    const int built = rt.agree_on_input([&] {
      device.emplace(o, &rt);
      trainer.emplace(o, device->context(), device->topology(), std::move(data));
    });
    if (built != 0) return built;
    const auto t0 = std::chrono::steady_clock::now();
    trainer->load_checkpoint(o.load);
    // The samples of the run's last evaluation: the validation stream stands after them.
    Trainer::LoopState at_last = trainer->loop_state();
    const int64_t global = derive(o, rt.world_size()).batch.global;
    const int64_t span = int64_t{o.eval_iters} * global, saved_valid = at_last.consumed_valid;
    at_last.consumed_valid = std::max<int64_t>(saved_valid - span, 0);
    trainer->restore_loop_state(at_last);
    log::info(
        " loaded checkpoint {} at iteration {} ({:.2f} s); evaluating {} global batches of {} "
        "sequences: validation samples {} to {}{}",
        o.load, iteration,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), o.eval_iters,
        global, at_last.consumed_valid, at_last.consumed_valid + span - 1,
        saved_valid >= span ? " (the run's last evaluation)"
        : saved_valid == 0  ? " (the run evaluated none)"
                            : "");
    MetricsWriter metrics(rt.rank() == 0 ? o.metrics_file : std::string(),
                          rt.rank() == 0 ? o.tensorboard_dir : std::string());
    const int at = static_cast<int>(iteration);
    const double valid = trainer->evaluate();
    metrics.write_validation(at, valid);
    log::line(MetricsWriter::validation_line(at, valid));
    if (trainer->has_test_data()) {
      const double test = trainer->evaluate_test();
      metrics.write_test(at, test);
      log::line(MetricsWriter::test_line(at, test));
    }
    return 0;
  });
}

}  // namespace zt::app
