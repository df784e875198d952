// Generation with the key/value cache against recomputing the whole prefix for every new token
// (Gpt::forward_logits over the position table, as a model without a cache must), on the CPU
// backend: milliseconds per generated token of each, medians over --reps runs, and their ratio.
// Prints one JSON object.
//   bench_generate [--layers L] [--hidden C] [--heads H] [--seq T] [--vocab V] [--new N]
//                  [--reps R]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_main.h"
#include "src/core/memory_pool.h"
#include "src/model/activation_store.h"
#include "src/model/gpt.h"
#include "src/model/gpt_decoder.h"
#include "src/model/resident_weights.h"
#include "src/model/sampler.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  return zt::bench::guarded([&] {
    int layers = 4, hidden = 256, heads = 4, seq = 256, vocab = 4096, fresh = 128, reps = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string_view f = argv[i];
      const int v = std::atoi(argv[i + 1]);
      ZT_REQUIRE(v > 0, "bench_generate: {} needs a positive integer", f);
      if (f == "--layers")
        layers = v;
      else if (f == "--hidden")
        hidden = v;
      else if (f == "--heads")
        heads = v;
      else if (f == "--seq")
        seq = v;
      else if (f == "--vocab")
        vocab = v;
      else if (f == "--new")
        fresh = v;
      else if (f == "--reps")
        reps = v;
      else
        throw zt::InputError(fmt::format("bench_generate: unknown flag {}", f));
    }
    ZT_REQUIRE(fresh < seq, "bench_generate: --new must be below --seq");
    zt::GptConfig c;
    c.num_layers = layers;
    c.hidden = hidden;
    c.heads = heads;
    c.seq_length = seq;
    c.vocab_size = vocab;
    c.padded_vocab_size = zt::pad_vocab(vocab, 128);
    const zt::ParamLayout layout = zt::ParamLayout::gpt(c);
    zt::MemoryPool pool(zt::make_host_allocator());
    zt::ResidentWeights w(layout, zt::DType::F32, pool);
    {
      std::vector<float> host(static_cast<size_t>(layout.numel()));
      zt::init_parameters(layout, 1234, host.data());
      w.set(0, host.data(), layout.numel());
    }
    const std::vector<int32_t> prompt = {1};
    zt::GptDecoder decoder(c, layout, seq, pool);
    zt::KeepAllActivations acts(pool, c, 1);
    zt::Gpt model(c, layout, 1, pool);
    std::vector<int32_t> tokens(static_cast<size_t>(seq), 0);
    std::vector<float> logits(static_cast<size_t>(seq) * c.padded_vocab_size);
    std::vector<double> cached, recomputed;
    for (int r = 0; r < reps; ++r) {
      zt::Sampler greedy(zt::SamplingSettings{.greedy = true});
      decoder.clear();
      auto t0 = std::chrono::steady_clock::now();
      const zt::Generation g = zt::generate(decoder, w, prompt, fresh, -1, greedy);
      cached.push_back(seconds_since(t0) * 1e3 / fresh);
      t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < fresh; ++k) {
        tokens[static_cast<size_t>(k)] = k == 0 ? prompt[0] : g.tokens[static_cast<size_t>(k - 1)];
        model.forward_logits(tokens.data(), w, acts, logits.data());
      }
      recomputed.push_back(seconds_since(t0) * 1e3 / fresh);
    }
    const double a = median(cached), b = median(recomputed);
    const nlohmann::json out = {
        {"layers", layers}, {"hidden", hidden},         {"heads", heads},
        {"seq", seq},       {"vocab", vocab},           {"new_tokens", fresh},
        {"reps", reps},     {"cached_ms_per_token", a}, {"recompute_ms_per_token", b},
        {"speedup", b / a}};
    fmt::print("{}\n", out.dump());
    return 0;
  });
}
