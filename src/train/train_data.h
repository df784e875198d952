#pragma once
// The sample streams a run trains and evaluates on. open_train_data opens and validates every
// file of --data-path and the tokenizer before anything else is allocated (apps/cmd_train.cpp
// calls it right after option validation), so a bad file is one "zerotron: error:" line naming
// it, on every rank alike, and never a failure halfway into building the model.
#include <memory>

#include "src/config/options.h"
#include "src/data/batch_source.h"

namespace zt {

struct TrainData {
  std::shared_ptr<const BatchSource> train;
  std::shared_ptr<const BatchSource> valid;  // null: no evaluation
  std::shared_ptr<const BatchSource> test;   // null: --split gives no test documents
};

// --mock-data: the synthetic stream, no validation. --data-path: the tokenizer's vocabulary
// becomes o.vocab_size (an explicit --vocab-size must agree), every dataset's token ids are
// checked against it, the --split train (and, with --eval-iters > 0, valid) documents of each
// dataset become GPT samples of --seq-length, blended by the --data-path weights. With
// --eval-iters > 0 and test documents in every dataset, the test split too (evaluated once at
// the end); a test split too small for one sample is left out with one line saying so.
// Throws InputError naming the file or option at fault.
TrainData open_train_data(TrainOptions& o);

}  // namespace zt
