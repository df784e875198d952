// Distributed training-step benchmark: for each requested ZeRO stage, trains the given model on
// this job's ranks (data parallel over the world unless --tensor-model-parallel-size says
// otherwise) and prints one JSON line: median step time, per-rank peak memory by category (max
// over ranks, from MemoryPool), comm bytes per group (CommStats) and the measured fraction of
// gradient communication hidden behind backward. With a pipeline (--pipeline-model-parallel-size,
// --num-layers-per-virtual-pipeline-stage) also the median measured bubble, the schedule's ideal
// bubble (pipeline::simulate with equal stage times: (P-1)/(m+P-1) for 1F1B), and each stage's
// peak memory and point-to-point bytes (max over its ranks).
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
#include "src/config/options.h"
#include "src/pipeline/schedule.h"
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
      const zt::comm::Topology& topo = device.topology();
      zt::Trainer trainer(o, device.context(), device.topology());
      std::vector<double> ms, hidden, bubble;
      zt::StepMetrics last;
      for (int s = 0; s < steps + warmup; ++s) {
        last = trainer.train_step();
        if (s < warmup) continue;
        ms.push_back(last.elapsed_ms);
        hidden.push_back(last.comm_hidden_fraction);
        bubble.push_back(last.pipeline_bubble);
      }
      // Each rank's own peak and pipeline bytes, gathered to every rank (host world).
      const int W = rt.world_size();
      std::vector<double> mine = {static_cast<double>(trainer.context().pool().total_peak()),
                                  static_cast<double>(last.comm_bytes_pp)};
      std::vector<double> all(2 * static_cast<size_t>(W));
      // A gather only copies: each double travels as two 4-byte words.
      topo.host_world().all_gather(
          zt::Tensor(mine.data(), {4}, zt::DType::F32, zt::Device::Cpu),
          zt::Tensor(all.data(), {4 * W}, zt::DType::F32, zt::Device::Cpu));
      const int P = topo.pp_size();
      std::vector<double> stage_peak(static_cast<size_t>(P), 0),
          stage_pp(static_cast<size_t>(P), 0);
      for (int r = 0; r < W; ++r) {
        const auto st = static_cast<size_t>(topo.grid().coord_of(r).pp);
        stage_peak[st] = std::max(stage_peak[st], all[2 * static_cast<size_t>(r)]);
        stage_pp[st] = std::max(stage_pp[st], all[2 * static_cast<size_t>(r) + 1]);
      }
      const int m =
          static_cast<int>(o.global_batch_size / (int64_t{o.micro_batch_size} * topo.dp_size()));
      const zt::pipeline::ScheduleShape shape{P, m, zt::model_chunks(o)};
      std::sort(bubble.begin(), bubble.end());
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
          {"comm_bytes_per_step",
           {{"dp", last.comm_bytes_dp}, {"tp", last.comm_bytes_tp}, {"pp", last.comm_bytes_pp}}},
          {"comm_hidden_fraction_median", hidden[hidden.size() / 2]},
          {"pp", P},
          {"model_chunks", shape.chunks},
          {"micro_batches", m},
          {"bubble_median", bubble[bubble.size() / 2]},
          {"bubble_ideal", zt::pipeline::simulate(shape, {}).bubble_fraction()},
          {"stage_peak_bytes", stage_peak},
          {"stage_p2p_bytes", stage_pp},
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
