// Checkpoint save/load benchmark: builds a trainer for the given flags, then either
// trains --bench-steps steps and saves to --save, or loads --load into it and then trains
// --bench-steps steps (so the loaded states are used), and prints one JSON line per rank:
// seconds, MB/s of model states, this rank's optimizer-state bytes (fp32 master, Adam m and v:
// what a checkpoint holds) and MemoryPool bytes per category, its resident memory before the
// save or load, its peak resident memory during it (VmHWM, reset just before through
// /proc/self/clear_refs), the loader's own accounting of the host bytes it held beyond the states
// and read, the load average when it began, and the losses of the trained steps.
//
// Usage: launch/mpirun.sh -np N build/bin/bench_checkpoint (--save DIR | --load DIR)
//        [--bench-steps N] [zerotron train flags]
//   --bench-steps N   steps trained before the save, or after the load (default 0)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_main.h"
#include "src/checkpoint/checkpoint.h"
#include "src/comm/runtime.h"
#include "src/comm/topology.h"
#include "src/config/derive.h"
#include "src/config/options.h"
#include "src/core/error.h"
#include "src/train/train_device.h"
#include "src/train/trainer.h"

namespace {

// A field of /proc/self/status in bytes (VmHWM: peak resident set; VmRSS: resident set now).
long long proc_status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == field) {
      long long kb = 0;
      in >> kb;
      return kb * 1024;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

// The 1, 5 and 15-minute load averages (/proc/loadavg).
std::vector<double> load_average() {
  std::ifstream in("/proc/loadavg");
  std::vector<double> la(3, -1.0);
  in >> la[0] >> la[1] >> la[2];
  return la;
}

// Resets VmHWM to the current resident set (Linux: "5" to clear_refs). False where refused.
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

static int run(int argc, char** argv) {
  zt::comm::MpiRuntime rt(argc, argv);
  return rt.run_guarded([&] {
    std::vector<std::string> flags = {"--mock-data", "--train-iters", "1"};
    int steps = 0;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--bench-steps") {
        if (i + 1 == argc) throw zt::InputError("--bench-steps needs a value");
        steps = std::stoi(argv[++i]);
        if (steps < 0) throw zt::InputError("--bench-steps must be 0 or more");
      } else {
        flags.push_back(a);
      }
    }
    std::vector<std::string_view> args(flags.begin(), flags.end());
    zt::TrainOptions o;
    zt::parse_train_options(args, o);
    zt::validate_train_options(o, zt::data_parallel_size(o, rt.world_size()));
    zt::resolve_device(o.device);
    zt::TrainDevice device(o, &rt);
    zt::Trainer trainer(o, device.context(), device.topology());
    size_t state_bytes = 0;
    for (const zt::Tensor& s : trainer.optimizer().owned_state()) state_bytes += s.bytes();
    const bool save = !o.save.empty();
    std::vector<double> losses;
    auto train = [&] {
      for (int i = 0; i < steps; ++i) losses.push_back(trainer.train_step().lm_loss);
    };
    if (save) train();
    const long long rss_before = proc_status_bytes("VmRSS:");
    const long long peak_before = proc_status_bytes("VmHWM:");
    device.topology().host_world().barrier();
    const std::vector<double> la = load_average();
    const bool peak_reset = reset_peak_rss();
    const auto t0 = std::chrono::steady_clock::now();
    zt::LoadAccounting acct;
    int iteration = 0;
    if (save) {
      trainer.save_checkpoint(o.save);
      iteration = trainer.loop_state().iteration;
    } else {
      iteration = trainer.load_checkpoint(o.load, &acct);
    }
    device.topology().host_world().barrier();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const long long peak_during = proc_status_bytes("VmHWM:");
    if (!save) train();
    nlohmann::json pool;
    const zt::MemoryPool& mp = device.pool();
    for (size_t c = 0; c < zt::kNumMemCategories; ++c) {
      const auto cat = static_cast<zt::MemCategory>(c);
      pool[std::string(zt::mem_category_name(cat))] = mp.current(cat);
    }
    pool["total"] = mp.total_current();
    const nlohmann::json j = {
        {"bench", save ? "checkpoint_save" : "checkpoint_load"},
        {"rank", rt.rank()},
        {"world", rt.world_size()},
        {"tp", device.topology().tp_size()},
        {"dp", device.topology().dp_size()},
        {"zero_stage", o.zero_stage},
        {"num_parameters", trainer.config().num_parameters()},
        {"iteration", iteration},
        {"load_average", la},
        {"seconds", s},
        {"state_bytes", state_bytes},
        {"state_mb_per_s", static_cast<double>(state_bytes) / 1e6 / s},
        {"memory_pool_bytes", pool},
        {"rss_before", rss_before},
        {"peak_rss_before", peak_before},
        {"peak_rss_during", peak_reset ? peak_during : -1},
        {"peak_rss_after_steps", proc_status_bytes("VmHWM:")},
        {"loader_peak_bytes", acct.peak},
        {"loader_bytes_read", acct.bytes_read},
        {"lm_loss", losses},
    };
    std::printf("%s\n", j.dump().c_str());
    return 0;
  });
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
