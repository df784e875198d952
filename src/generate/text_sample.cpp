#include "src/generate/text_sample.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "src/model/gpt_decoder.h"
#include "src/model/sampler.h"

namespace zt {

TextSample::TextSample(const TrainOptions& o) {
  if ((!o.vocab_file.empty() && !o.merge_file.empty()) || !o.tokenizer_model.empty())
    tokenizer_ =
        data::load_tokenizer(o.tokenizer_type, o.vocab_file, o.merge_file, o.tokenizer_model);
}

std::string TextSample::run(const GptConfig& config, const ParamLayout& layout, ParamSource& params,
                            const DeviceContext& ctx, comm::Communicator* tp,
                            const std::function<void()>& before_forward) const {
  GptConfig c = config;
  c.attention_dropout = c.hidden_dropout = 0;
  GptDecoder decoder(c, layout, std::min(c.seq_length, kTokens), ctx, tp);
  // <|endoftext|> starts the sample; without a tokenizer the last id (GPT-2's layout, and the
  // mock data's document end).
  const int32_t start =
      tokenizer_ ? tokenizer_->eod().value_or(c.vocab_size - 1) : c.vocab_size - 1;
  Sampler greedy(SamplingSettings{.greedy = true});
  const Generation g = generate(decoder, params, std::span<const int32_t>(&start, 1), kTokens, -1,
                                greedy, {}, before_forward);
  if (!tokenizer_) return fmt::format("ids {}", fmt::join(g.tokens, ","));
  // One console line: the text as a JSON string (newlines and control characters escaped).
  return nlohmann::json(tokenizer_->decode(g.tokens))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace zt
