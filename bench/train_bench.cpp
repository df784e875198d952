// Distributed training-step benchmark: for each requested ZeRO stage, trains the given model on
// this job's ranks (data parallel over the world unless --tensor-model-parallel-size says
// otherwise) and prints one JSON line: median step time, per-rank peak memory by category (max
// over ranks, from MemoryPool), comm bytes per group (CommStats) and the measured fraction of
// gradient communication hidden behind backward.
//
// Usage: launch/mpirun.sh -np N build/bin/bench_train [--stages 0,1,2,3] [--steps K]
//        [--warmup W] [zerotron train flags, --device cuda|cpu|auto among them]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_main.h"
#include "src/comm/runtime.h"
#include "src/comm/topology.h"
#include "src/train/options.h"
#include "src/train/train_device.h"
#include "src/train/trainer.h"

static int run(int argc, char** argv) {
  zt::comm::MpiRuntime rt(argc, argv);
  return rt.run_guarded([&] {
    std::vector<int> stages = {0};
    int steps = 5, warmup = 1;
    std::vector<std::string> flags = {"--mock-data", "--log-interval", "1000000"};
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--stages" && i + 1 < argc) {
        stages.clear();
        const std::string list = argv[++i];
        for (size_t at = 0; at < list.size();) {
          const size_t comma = std::min(list.find(',', at), list.size());
          stages.push_back(std::stoi(list.substr(at, comma - at)));
          at = comma + 1;
        }
      } else if (a == "--steps" && i + 1 < argc) {
        steps = std::stoi(argv[++i]);
      } else if (a == "--warmup" && i + 1 < argc) {
        warmup = std::stoi(argv[++i]);
      } else {
        flags.push_back(a);
      }
    }
    flags.push_back("--train-iters");
    flags.push_back(std::to_string(steps + warmup));
    std::vector<std::string_view> args(flags.begin(), flags.end());
    zt::TrainOptions base;
    zt::parse_train_options(args, base);
    zt::validate_train_options(base, zt::data_parallel_size(base, rt.world_size()));
    zt::resolve_device(base.device);  // before anything is allocated
    for (int stage : stages) {
      zt::TrainOptions o = base;
      o.zero_stage = stage;
      // The backend, its pools and the groups --device asks for (outlives the trainer).
      zt::TrainDevice device(o, &rt);
      const zt::comm::Topology& topo = *device.topology();
      zt::Trainer trainer(o, device.context(), device.topology());
      std::vector<double> ms, hidden;
      zt::StepMetrics last;
      for (int s = 0; s < steps + warmup; ++s) {
        last = trainer.train_step();
        if (s < warmup) continue;
        ms.push_back(last.elapsed_ms);
        hidden.push_back(last.comm_hidden_fraction);
      }
      std::sort(ms.begin(), ms.end());
      std::sort(hidden.begin(), hidden.end());
      nlohmann::json mem;
      for (size_t c = 0; c < zt::kNumMemCategories; ++c)
        mem[std::string(zt::mem_category_name(static_cast<zt::MemCategory>(c)))] =
            last.memory_peak[c];
      mem["peak"] = last.memory_total_peak;
      const nlohmann::json j = {
          {"bench", "train_step"},
          {"device", device.device_name()},
          {"world", rt.world_size()},
          {"tp", topo.tp_size()},
          {"dp", topo.dp_size()},
          {"zero_stage", stage},
          {"precision", o.bf16 ? "bf16" : (o.fp16 ? "fp16" : "fp32")},
          {"num_parameters", last.num_parameters},
          {"global_batch", o.global_batch_size},
          {"micro_batch", o.micro_batch_size},
          {"steps", steps},
          {"median_step_ms", ms[ms.size() / 2]},
          {"tokens_per_s", last.tokens_per_s},
          {"memory_per_rank_max", mem},
          {"comm_bytes_per_step", {{"dp", last.comm_bytes_dp}, {"tp", last.comm_bytes_tp}}},
          {"comm_hidden_fraction_median", hidden[hidden.size() / 2]},
          {"overlap_comm", o.overlap_comm},
      };
      if (rt.rank() == 0) std::printf("%s\n", j.dump().c_str());
    }
    return 0;
  });
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
