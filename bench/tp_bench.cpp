// Tensor-parallel step benchmark: the same model at tp = world size (run it once per tp under
// launch/mpirun.sh -np tp, which gives each rank cores/tp threads, so every run uses the same
// cores). Rank 0 prints one JSON object: median step time (forward + backward + AdamW, stage 0,
// fp32, no data parallelism), the tp-group bytes per step from CommStats, and every rank's peak
// memory from its MemoryPool (total and per category).
//
// Usage: launch/mpirun.sh -np T bench_tp [--layers L] [--hidden H] [--heads A] [--seq S]
//        [--vocab V] [--micro-batch B] [--steps K] [--warmup W]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_main.h"
#include "src/comm/runtime.h"
#include "src/comm/topology.h"
#include "src/core/memory_pool.h"
#include "src/model/activation_store.h"
#include "src/model/gpt.h"
#include "src/zero/zero_optimizer.h"

namespace {

struct BenchArgs {
  int layers = 4, hidden = 512, heads = 8, seq = 256, vocab = 8000, micro_batch = 4;
  int steps = 6, warmup = 1;
};

BenchArgs parse(int argc, char** argv) {
  BenchArgs a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (f == "--layers")
      a.layers = v;
    else if (f == "--hidden")
      a.hidden = v;
    else if (f == "--heads")
      a.heads = v;
    else if (f == "--seq")
      a.seq = v;
    else if (f == "--vocab")
      a.vocab = v;
    else if (f == "--micro-batch")
      a.micro_batch = v;
    else if (f == "--steps")
      a.steps = v;
    else if (f == "--warmup")
      a.warmup = v;
    else
      throw zt::InputError("bench_tp: unknown flag " + f);
  }
  return a;
}

// Every rank's value, on every rank (an fp32 all-gather: byte counts are sent in MiB).
std::vector<float> gather(zt::comm::Communicator& world, float mine) {
  std::vector<float> v(static_cast<size_t>(world.size()), 0.0f);
  v[static_cast<size_t>(world.rank())] = mine;
  world.all_gather(zt::Tensor(v.data(), zt::Shape{world.size()}, zt::DType::F32));
  return v;
}

float mib(size_t bytes) {
  return static_cast<float>(static_cast<double>(bytes) / (1024.0 * 1024.0));
}

}  // namespace

static int run(int argc, char** argv) {
  zt::comm::MpiRuntime rt(argc, argv);
  return rt.run_guarded([&] {
    const BenchArgs a = parse(argc, argv);
    zt::MemoryPool pool(zt::make_host_allocator());
    auto world = rt.world(pool);
    const int tp = world->size();
    zt::comm::Topology topo(*world, tp);
    zt::GptConfig c;
    c.num_layers = a.layers;
    c.hidden = a.hidden;
    c.heads = a.heads;
    c.seq_length = a.seq;
    c.vocab_size = a.vocab;
    c.padded_vocab_size = zt::padded_vocab_size(a.vocab, 128, tp);
    c.attention_dropout = c.hidden_dropout = 0.1f;
    const zt::ParamLayout layout = zt::ParamLayout::gpt(c, tp, topo.tp_rank());
    zt::ZeroOptimizer opt(layout, zt::DType::F32, zt::AdamConfig{}, pool, 1234);
    zt::KeepAllActivations acts(pool, c, a.micro_batch, tp);
    zt::Gpt model(c, layout, a.micro_batch, pool, &topo.tp());
    const int N = a.micro_batch * a.seq;
    std::vector<int32_t> tokens(static_cast<size_t>(N)), targets(tokens.size());
    for (int i = 0; i < N; ++i) {
      tokens[static_cast<size_t>(i)] = static_cast<int32_t>(zt::mix64(1, i) % a.vocab);
      targets[static_cast<size_t>(i)] = static_cast<int32_t>(zt::mix64(2, i) % a.vocab);
    }
    std::vector<double> ms;
    zt::comm::StepCommMeter meter(topo.stats());
    zt::comm::CommSnapshot step_comm;
    double loss = 0;
    for (int s = 0; s < a.warmup + a.steps; ++s) {
      world->barrier();
      pool.reset_peaks();
      meter.begin_step();
      const auto t0 = std::chrono::steady_clock::now();
      opt.zero_grad();
      loss = model.forward_backward(tokens.data(), targets.data(), 1.0f / static_cast<float>(N),
                                    opt, acts, zt::DropoutSeeds{1234, s * a.micro_batch});
      opt.step(1e-4, 1.0);
      const double t =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      step_comm = meter.end_step();
      if (s >= a.warmup) ms.push_back(t);
    }
    // The step time of the slowest rank (the job waits for it), median over steps.
    for (double& t : ms) {
      float v = static_cast<float>(t);
      world->all_reduce(zt::Tensor(&v, zt::Shape{1}, zt::DType::F32), zt::comm::ReduceOp::Max);
      t = v;
    }
    std::sort(ms.begin(), ms.end());
    nlohmann::json peak = nlohmann::json::object();
    peak["total_mib"] = gather(*world, mib(pool.total_peak()));
    for (size_t k = 0; k < zt::kNumMemCategories; ++k) {
      const auto cat = static_cast<zt::MemCategory>(k);
      peak[std::string(zt::mem_category_name(cat)) + "_mib"] = gather(*world, mib(pool.peak(cat)));
    }
    if (topo.rank() == 0) {
      nlohmann::json j;
      j["bench"] = "tp_step";
      j["tp"] = tp;
      j["model"] = {{"layers", a.layers},
                    {"hidden", a.hidden},
                    {"heads", a.heads},
                    {"seq", a.seq},
                    {"vocab", a.vocab},
                    {"padded_vocab", c.padded_vocab_size},
                    {"micro_batch", a.micro_batch},
                    {"parameters", c.num_parameters()}};
      j["threads_per_rank"] = std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "";
      j["params_per_rank"] = layout.numel();
      j["step_ms_median"] = ms[ms.size() / 2];
      j["step_ms_min"] = ms.front();
      j["loss"] = loss;
      j["tp_comm_bytes_per_step"] = step_comm.group(zt::comm::GroupKind::Tp).bytes;
      j["peak_memory_per_rank"] = peak;
      std::printf("%s\n", j.dump().c_str());
    }
    return 0;
  });
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
