// Training-step benchmark: one JSON object with the median step time of the bench config, the
// model FLOP/s it implies, and — measured in this process with the same threads — the sgemm
// GFLOP/s OpenBLAS reaches on the model's own GEMM shapes, and their ratio.
//
// FLOPs per step = (6·N + 12·L·h·s) · tokens (GptConfig::flops_per_token): 6N for the dense
// forward and backward, 12·L·h·s for the attention score and value products; N counts every
// parameter (the tied head once).
//
// Usage: bench_step [--steps K] [--warmup W] [--bf16] [model flags as in zerotron train, e.g.
//        --working-params cast]
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_main.h"
#include "bench/machine.h"
#include "kernels/cpu/gemm_mixed.h"
#include "kernels/cpu/ops.h"
#include "src/comm/self_communicator.h"
#include "src/config/options.h"
#include "src/core/memory_pool.h"
#include "src/train/trainer.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Gemm {
  bool ta, tb;
  int m, n, k;
};

// The GEMMs of one training step (forward, input-gradient and weight-gradient products of every
// linear layer and the head), each with its count. Attention's per-head products are left out:
// they are small batched GEMMs, not the sgemm peak being measured.
std::vector<std::pair<Gemm, int>> model_gemms(const zt::GptConfig& c, int batch) {
  const int n = batch * c.seq_length, h = c.hidden, f = c.ffn_hidden(), v = c.padded_vocab_size;
  const int L = c.num_layers, qkv = c.qkv_rows(), fc = c.fc_rows();
  std::vector<std::pair<Gemm, int>> g;
  for (auto [in, out, count] : {std::tuple{h, qkv, L}, std::tuple{h, h, L}, std::tuple{h, fc, L},
                                std::tuple{f, h, L}, std::tuple{h, v, 1}}) {
    g.push_back({Gemm{false, true, n, out, in}, count});   // y = x·Wᵀ
    g.push_back({Gemm{false, false, n, in, out}, count});  // dx = dy·W
    g.push_back({Gemm{true, false, out, in, n}, count});   // dW = dyᵀ·x
  }
  return g;
}

double sgemm_gflops(const std::vector<std::pair<Gemm, int>>& gemms, int repeats) {
  size_t max_elems = 0;
  for (const auto& [g, count] : gemms) {
    max_elems = std::max({max_elems, size_t(g.m) * g.k, size_t(g.k) * g.n, size_t(g.m) * g.n});
  }
  std::vector<float> a(max_elems, 0.01f), b(max_elems, 0.02f), c(max_elems, 0.0f);
  double flops = 0, secs = 0;
  for (int r = 0; r < repeats + 1; ++r) {
    for (const auto& [g, count] : gemms) {
      const int lda = g.ta ? g.m : g.k, ldb = g.tb ? g.k : g.n;
      const auto t0 = Clock::now();
      zt::cpu::gemm(g.ta, g.tb, g.m, g.n, g.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(),
                    g.n);
      const double dt = seconds_since(t0);
      if (r == 0) continue;  // warm-up pass
      flops += 2.0 * g.m * g.n * g.k * count;
      secs += dt * count;
    }
  }
  return flops / secs / 1e9;
}

// Milliseconds to cast `elems` fp32 elements to bf16 with the backend's kernel, over a master
// of `numel` elements in layout-sized pieces (median of 5 passes after one warm-up).
double cast_ms(int64_t elems, int64_t numel) {
  std::vector<float> master(static_cast<size_t>(numel), 0.01f);
  std::vector<zt::bf16> out(static_cast<size_t>(numel));
  std::vector<double> t;
  for (int r = 0; r < 6; ++r) {
    const auto t0 = Clock::now();
    for (int64_t done = 0; done < elems;) {
      const int64_t n = std::min(numel, elems - done);
      zt::cpu::Kernels::cast(out.data(), master.data(), n);
      done += n;
    }
    if (r > 0) t.push_back(seconds_since(t0) * 1e3);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

static int run(int argc, char** argv) {
  int steps = 10, warmup = 2;
  std::vector<std::string> storage = {"--num-layers",
                                      "8",
                                      "--hidden-size",
                                      "512",
                                      "--num-attention-heads",
                                      "8",
                                      "--seq-length",
                                      "512",
                                      "--micro-batch-size",
                                      "4",
                                      "--vocab-size",
                                      "8192",
                                      "--make-vocab-size-divisible-by",
                                      "128",
                                      "--mock-data",
                                      "--attention-dropout",
                                      "0",
                                      "--hidden-dropout",
                                      "0",
                                      "--lr",
                                      "1e-4",
                                      "--log-interval",
                                      "1000000"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) {
      steps = std::stoi(argv[++i]);
    } else if (a == "--warmup" && i + 1 < argc) {
      warmup = std::stoi(argv[++i]);
    } else {
      storage.push_back(a);
    }
  }
  storage.push_back("--train-iters");
  storage.push_back(std::to_string(steps + warmup));
  std::vector<std::string_view> args(storage.begin(), storage.end());
  zt::TrainOptions o;
  zt::parse_train_options(args, o);
  zt::validate_train_options(o, 1);
  zt::MemoryPool pool(zt::make_host_allocator());
  zt::comm::SelfWorld alone;
  zt::Trainer trainer(o, pool, alone.topology());
  std::vector<double> ms;
  nlohmann::json by_category;  // the last step's pool peak per category
  for (int s = 0; s < steps + warmup; ++s) {
    const zt::StepMetrics m = trainer.train_step();
    if (s >= warmup) ms.push_back(m.elapsed_ms);
    for (size_t c = 0; c < zt::kNumMemCategories; ++c)
      by_category[std::string(zt::mem_category_name(static_cast<zt::MemCategory>(c)))] =
          m.memory_peak[c];
  }
  // Peak RSS of training, read before the sgemm reference allocates its own operands.
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::sort(ms.begin(), ms.end());
  const double median_ms = ms[ms.size() / 2];
  const zt::GptConfig c = zt::gpt_config_from(o);
  const double tokens = static_cast<double>(o.micro_batch_size) * o.seq_length;
  const double model_gflops = c.flops_per_token() * tokens / (median_ms / 1e3) / 1e9;
  const double sgemm = sgemm_gflops(model_gemms(c, o.micro_batch_size), 3);
  // --working-params cast: what the store cast per step, and that many elements cast here
  // alone (the same kernel, master to bf16 buffer) — the cost the step pays for the memory.
  nlohmann::json cast;
  if (const zt::CastStats* cs = trainer.optimizer().cast_stats()) {
    const int64_t per_step = cs->cast_elems / (steps + warmup);
    cast = {{"arena_elems", cs->arena_elems},
            {"peak_held_elems", cs->peak_elems},
            {"acquires_per_step", cs->casts / (steps + warmup)},
            {"elems_per_step", per_step},
            {"cast_ms_per_step", cast_ms(per_step, c.num_parameters())}};
  }
  nlohmann::json j = {
      {"impl", "zerotron"},
      {"config",
       {{"num_layers", c.num_layers},
        {"hidden", c.hidden},
        {"heads", c.heads},
        {"kv_heads", c.kv_heads()},
        {"ffn_hidden", c.ffn_hidden()},
        {"gpt2_architecture", c.gpt2_architecture()},
        {"seq_length", c.seq_length},
        {"micro_batch", o.micro_batch_size},
        {"vocab", c.vocab_size},
        {"precision", o.bf16 ? "bf16" : (o.fp16 ? "fp16" : "fp32")},
        {"working_params", o.working_params}}},
      {"num_parameters", c.num_parameters()},
      {"steps", steps},
      {"median_step_ms", median_ms},
      {"tokens_per_s", tokens / (median_ms / 1e3)},
      {"model_tflops", model_gflops / 1e3},
      {"sgemm_gflops_model_shapes", sgemm},
      {"model_over_sgemm", model_gflops / sgemm},
      {"peak_pool_bytes", pool.total_peak()},
      {"peak_pool_bytes_by_category", by_category},
      {"peak_rss_bytes", static_cast<int64_t>(ru.ru_maxrss) * 1024},
      {"cast", cast},
      {"threads", omp_get_max_threads()},
      {"cpu", zt::bench::cpu_info()},
      {"onednn_isa", zt::cpu::detail::onednn_isa_name()},
  };
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
