#pragma once
// The key/value-cached decoder (src/model/gpt_decoder.h) against the model without a cache: a
// greedy continuation that recomputes the whole prefix for every token with Gpt::forward_logits
// (tp = 1), and the same continuation through GptDecoder, token by token, with the logits row
// behind each choice. Used by the single-process test (tests/unit/model_gpt_decoder_test.cpp)
// and the tensor-parallel one (tests/dist/generate_test.cpp).
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "src/model/activation_store.h"
#include "src/model/gpt.h"
#include "src/model/gpt_decoder.h"
#include "src/model/resident_weights.h"
#include "src/model/sampler.h"

namespace zt::test {

struct Continuation {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> rows;  // per token: the logits it was chosen from (real vocab)
};

// GPT-2's initialisation times `scale` (sharper logits than std 0.02 gives, so a greedy choice
// is not decided by a rounding), as this rank's shard of `layout`.
inline std::vector<float> scaled_init(const ParamLayout& layout, uint64_t seed, float scale) {
  std::vector<float> host(static_cast<size_t>(layout.numel()));
  init_parameters(layout, seed, host.data());
  for (const ParamSpec& p : layout.params())
    if (p.init == ParamInit::Normal)
      for (int64_t i = 0; i < p.numel(); ++i) host[static_cast<size_t>(p.offset + i)] *= scale;
  return host;
}
inline void load_scaled_init(ResidentWeights& w, const ParamLayout& layout, uint64_t seed,
                             float scale) {
  w.set(0, scaled_init(layout, seed, scale).data(), layout.numel());
}

// Greedy, recomputing the prefix each token: one tp = 1 forward over [1, T] (the positions after
// the prefix hold token 0; causal attention keeps them out of the rows read).
inline Continuation greedy_by_recompute(const GptConfig& c, const ParamLayout& layout,
                                        ParamSource& params, MemoryPool& pool,
                                        std::span<const int32_t> prompt, int max_new) {
  KeepAllActivations acts(pool, c, 1);
  Gpt model(c, layout, 1, pool);
  std::vector<int32_t> seq(prompt.begin(), prompt.end()), tokens(static_cast<size_t>(c.seq_length));
  std::vector<float> logits(static_cast<size_t>(c.seq_length) * c.padded_vocab_size);
  Continuation out;
  for (int k = 0; k < max_new; ++k) {
    std::fill(tokens.begin(), tokens.end(), 0);
    std::copy(seq.begin(), seq.end(), tokens.begin());
    model.forward_logits(tokens.data(), params, acts, logits.data());
    const float* row = logits.data() + (seq.size() - 1) * static_cast<size_t>(c.padded_vocab_size);
    out.rows.emplace_back(row, row + c.vocab_size);
    out.tokens.push_back(argmax(out.rows.back()));
    seq.push_back(out.tokens.back());
  }
  return out;
}

// The same through the decoder (any tp layout, its group `tp`).
inline Continuation greedy_cached(GptDecoder& decoder, ParamSource& params,
                                  std::span<const int32_t> prompt, int max_new) {
  Sampler greedy(SamplingSettings{.greedy = true});
  Continuation out;
  decoder.clear();
  const Generation g = generate(decoder, params, prompt, max_new, -1, greedy, [&](int32_t) {
    out.rows.emplace_back(decoder.logits().begin(), decoder.logits().end());
  });
  out.tokens = g.tokens;
  return out;
}

// max over rows of max |got - want| / max |want|.
inline double max_rel_diff(const Continuation& got, const Continuation& want) {
  double worst = 0;
  for (size_t r = 0; r < std::min(got.rows.size(), want.rows.size()); ++r) {
    double diff = 0, ref = 1e-30;
    for (size_t i = 0; i < want.rows[r].size(); ++i) {
      diff = std::max(diff, std::abs(static_cast<double>(got.rows[r][i]) - want.rows[r][i]));
      ref = std::max(ref, std::abs(static_cast<double>(want.rows[r][i])));
    }
    worst = std::max(worst, diff / ref);
  }
  return worst;
}

// The smallest gap between the best and the second-best logit over the rows: how far from a tie
// each greedy choice was.
inline double min_top2_gap(const Continuation& c) {
  double gap = INFINITY;
  for (const auto& row : c.rows) {
    std::vector<float> r = row;
    std::partial_sort(r.begin(), r.begin() + 2, r.end(), std::greater<>());
    gap = std::min(gap, static_cast<double>(r[0] - r[1]));
  }
  return gap;
}

}  // namespace zt::test
