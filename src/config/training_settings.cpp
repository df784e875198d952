#include "src/config/training_settings.h"

#include <filesystem>

namespace zt {

nlohmann::json training_settings(const TrainOptions& o, int64_t global_batch) {
  nlohmann::json s = {{"lr", o.lr},
                      {"min-lr", o.min_lr},
                      {"lr-warmup-iters", o.lr_warmup_iters},
                      {"lr-decay-iters", o.lr_decay_iters == 0 ? o.train_iters : o.lr_decay_iters},
                      {"lr-decay-style", o.lr_decay_style},
                      {"adam-beta1", o.adam_beta1},
                      {"adam-beta2", o.adam_beta2},
                      {"adam-eps", o.adam_eps},
                      {"weight-decay", o.weight_decay},
                      {"clip-grad", o.clip_grad},
                      {"global-batch-size", global_batch}};
  // Later additions, each written only where it is not the option's default, so that a run at
  // the defaults writes what earlier versions wrote and a reader takes an absent key as the
  // default. The micro batch and the evaluation's length are what `zerotron evaluate` needs to
  // score the run's last validation samples as the run did.
  if (o.lr_warmup_style != option_defaults::lr_warmup_style)
    s["lr-warmup-style"] = o.lr_warmup_style;
  if (o.micro_batch_size != option_defaults::micro_batch_size)
    s["micro-batch-size"] = o.micro_batch_size;
  if (o.eval_iters != option_defaults::eval_iters) s["eval-iters"] = o.eval_iters;
  // The tokenizer the ids mean something in: what `zerotron generate` decodes with.
  std::error_code ec;
  if (!o.vocab_file.empty() && !o.merge_file.empty()) {
    s["vocab-file"] = std::filesystem::absolute(o.vocab_file, ec).string();
    s["merge-file"] = std::filesystem::absolute(o.merge_file, ec).string();
  }
  if (!o.tokenizer_model.empty())
    s["tokenizer-model"] = std::filesystem::absolute(o.tokenizer_model, ec).string();
  return s;
}

}  // namespace zt
