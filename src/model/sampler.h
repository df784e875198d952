#pragma once
// Choosing the next token from a row of logits, and the generation loop over a GptDecoder.
// Sampling follows Hugging Face's generate: the logits divided by the temperature, then the
// top-k cut, then the top-p (nucleus) cut (the fewest most likely tokens whose probability
// reaches p, at least one), then one draw from the softmax of what is left. Greedy is the first
// largest logit (torch.argmax's tie rule). The draws are a pure function of (seed, step), so
// every tensor-parallel rank, holding the same logits, picks the same token.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "src/model/gpt_decoder.h"
#include "src/model/param_source.h"

namespace zt {

struct SamplingSettings {
  bool greedy = false;
  float temperature = 1.0f;  // > 0
  int top_k = 0;             // 0: no cut
  float top_p = 1.0f;        // in (0, 1]; 1: no cut
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingSettings& s) : s_(s) {}
  // The next token's id in [0, logits.size()); advances the random stream.
  int32_t next(std::span<const float> logits);

 private:
  SamplingSettings s_;
  uint64_t step_ = 0;
  std::vector<int32_t> order_;
  std::vector<float> probs_;
};

// The index of the first largest element.
int32_t argmax(std::span<const float> logits);

struct Generation {
  std::vector<int32_t> tokens;  // the new tokens, `eos` included when it ended the generation
  bool ended_at_eos = false;
};

// Runs `prompt` through `decoder` (which must be empty), then chooses up to `max_new` tokens,
// each fed back, stopping after `eos` (< 0: never) or when the decoder's positions run out
// (its capacity() + 1 tokens of prompt and output in all: the last needs no position).
// `on_token` sees each token as it is chosen; `before_append` runs before each forward (a
// ZeRO stage-3 source restarts its recorded acquire order there, as before a training forward).
// Either may be empty.
Generation generate(GptDecoder& decoder, ParamSource& params, std::span<const int32_t> prompt,
                    int max_new, int32_t eos, Sampler& sampler,
                    const std::function<void(int32_t)>& on_token = {},
                    const std::function<void()>& before_append = {});

}  // namespace zt
