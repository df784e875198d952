#include "src/model/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/common/dropout.h"
#include "src/core/error.h"

namespace zt {

int32_t argmax(std::span<const float> logits) {
  ZT_CHECK(!logits.empty(), "argmax of no logits");
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int32_t Sampler::next(std::span<const float> logits) {
  const uint64_t step = step_++;
  if (s_.greedy) return argmax(logits);
  const auto v = static_cast<int32_t>(logits.size());
  order_.resize(static_cast<size_t>(v));
  std::iota(order_.begin(), order_.end(), 0);
  // Most likely first; equal logits by id, so the order (and the draw) is the same everywhere.
  auto before = [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  };
  int32_t keep = v;
  if (s_.top_k > 0 && s_.top_k < v) {
    keep = s_.top_k;
    std::partial_sort(order_.begin(), order_.begin() + keep, order_.end(), before);
  } else {
    std::sort(order_.begin(), order_.end(), before);
  }
  // Softmax of the kept logits over the temperature, in double.
  const double mx = logits[static_cast<size_t>(order_[0])] / s_.temperature;
  probs_.resize(static_cast<size_t>(keep));
  double sum = 0;
  for (int32_t i = 0; i < keep; ++i) {
    const double p = std::exp(logits[static_cast<size_t>(order_[i])] / s_.temperature - mx);
    probs_[static_cast<size_t>(i)] = static_cast<float>(p);
    sum += p;
  }
  if (s_.top_p < 1.0f) {
    // The fewest tokens whose probability reaches top_p (the one that crosses it included).
    double acc = 0;
    int32_t n = 0;
    while (n < keep && acc < s_.top_p * sum) acc += probs_[static_cast<size_t>(n++)];
    keep = std::max(n, 1);
    sum = 0;
    for (int32_t i = 0; i < keep; ++i) sum += probs_[static_cast<size_t>(i)];
  }
  // One uniform draw in [0, sum) from (seed, step): 53 random bits.
  const double u =
      static_cast<double>(mix64(s_.seed, step) >> 11) * (1.0 / 9007199254740992.0) * sum;
  double acc = 0;
  for (int32_t i = 0; i < keep; ++i) {
    acc += probs_[static_cast<size_t>(i)];
    if (u < acc) return order_[static_cast<size_t>(i)];
  }
  return order_[static_cast<size_t>(keep - 1)];
}

Generation generate(GptDecoder& decoder, ParamSource& params, std::span<const int32_t> prompt,
                    int max_new, int32_t eos, Sampler& sampler,
                    const std::function<void(int32_t)>& on_token,
                    const std::function<void()>& before_append) {
  ZT_CHECK(decoder.length() == 0, "generate() needs an empty decoder");
  ZT_CHECK(!prompt.empty() && static_cast<int>(prompt.size()) <= decoder.capacity(),
           "a prompt of {} tokens for a decoder of {} positions", prompt.size(),
           decoder.capacity());
  Generation g;
  if (before_append) before_append();
  decoder.append(prompt, params);
  for (int i = 0; i < max_new; ++i) {
    const int32_t id = sampler.next(decoder.logits());
    g.tokens.push_back(id);
    if (on_token) on_token(id);
    if (id == eos) {
      g.ended_at_eos = true;
      break;
    }
    if (i + 1 == max_new || decoder.length() == decoder.capacity()) break;
    if (before_append) before_append();
    decoder.append(std::span<const int32_t>(&id, 1), params);
  }
  return g;
}

}  // namespace zt
