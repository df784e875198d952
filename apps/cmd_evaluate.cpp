// zerotron evaluate --load DIR --data-path ... [--eval-iters N] [train's flags]: the loss and
// perplexity of a saved model on the validation split of --split (and on its test split when it
// has one), from their first sample, dropout off. The model's shape comes from the checkpoint;
// any saved layout loads into the layout of this run (tp, pp, dp, ZeRO stage), reshaping as
// train's --load does. Flags are train's (one options table); bad input is one line, exit 2.
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
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/train/metrics.h"
#include "src/train/train_data.h"
#include "src/train/train_device.h"
#include "src/train/trainer.h"

namespace zt::app {

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
      help = !parse_train_options(args, o);
      if (help) return;
      rt.set_comm_timeout(o.comm_timeout);
      ZT_REQUIRE(!o.load.empty(), "evaluate: --load DIR is required (a checkpoint directory)");
      ZT_REQUIRE(!o.data_path.empty(), "evaluate: --data-path is required (the data to score)");
      ZT_REQUIRE(o.eval_iters > 0, "evaluate: --eval-iters must be positive");
      check_load_readable(o.load);
      nlohmann::json meta;
      const std::string dir = checkpoint_iteration_dir(o.load, checkpoint_step(o), meta);
      // Every shard file is opened (and refused unless a regular file) before allocating.
      const GptConfig saved = SavedCheckpoint(dir, meta).model();
      iteration = meta.at("iteration").get<int64_t>();
      o.num_layers = saved.num_layers;
      o.hidden_size = saved.hidden;
      o.num_attention_heads = saved.heads;
      o.seq_length = saved.seq_length;
      o.attention_dropout = saved.attention_dropout;
      o.hidden_dropout = saved.hidden_dropout;
      set_architecture_options(o, saved);
      o.vocab_size = saved.vocab_size;  // the tokenizer of --vocab-file must agree
      o.save.clear();
      derive(o, rt.world_size());  // every check of the options and the layout
      data = open_train_data(o);
      validate_tensor_parallel(gpt_config_from(o), o.tensor_model_parallel_size);
    });
    if (verdict != 0) return verdict;
    if (help) {
      if (rt.rank() == 0) std::fputs(train_options_help().c_str(), stdout);
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
    Trainer::LoopState from_start = trainer->loop_state();
    from_start.consumed_valid = 0;  // the validation split from its first sample
    trainer->restore_loop_state(from_start);
    log::info(
        " loaded checkpoint {} at iteration {} ({:.2f} s); evaluating {} global batches of "
        "{} sequences",
        o.load, iteration,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), o.eval_iters,
        derive(o, rt.world_size()).batch.global);
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
