#pragma once
// --sample-interval: a short greedy continuation of <|endoftext|> by the model being trained,
// as llm.c prints during training, so a run shows what its model writes. Every rank computes it
// (tensor parallelism and ZeRO stage 3 gather over their groups; the decoder's workspace and
// cache are allocated for the sample and freed after, in MemCategory::KvCache); the text is one
// line, its newlines escaped, or the ids without a tokenizer (--mock-data).
#include <functional>
#include <optional>
#include <string>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/config/options.h"
#include "src/data/bpe_tokenizer.h"
#include "src/model/gpt_config.h"
#include "src/model/param_layout.h"
#include "src/model/param_source.h"

namespace zt {

class TextSample {
 public:
  static constexpr int kTokens = 32;
  // Reads --vocab-file/--merge-file when given.
  explicit TextSample(const TrainOptions& o);
  // Collective over `tp` and whatever `params` gathers on; `before_forward` runs before each
  // forward. The sample as the console shows it.
  std::string run(const GptConfig& config, const ParamLayout& layout, ParamSource& params,
                  const DeviceContext& ctx, comm::Communicator* tp,
                  const std::function<void()>& before_forward) const;

 private:
  std::optional<data::BpeTokenizer> tokenizer_;
};

}  // namespace zt
