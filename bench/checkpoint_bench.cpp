// Checkpoint save/load benchmark (issue 16): builds a trainer for the given flags (no step is
// trained: the states are the initial ones, which is all a save or a load moves), then either
// saves it to --save or loads --load into it, and prints one JSON line per rank: seconds, MB/s
// of model states, this rank's model-state bytes, its peak RSS (VmHWM) before and after, and the
// loader's own accounting of the host bytes it held beyond the states.
//
// Usage: launch/mpirun.sh -np N build/bin/bench_checkpoint (--save DIR | --load DIR)
//        [zerotron train flags]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/comm/runtime.h"
#include "src/comm/topology.h"
#include "src/train/checkpoint.h"
#include "src/train/options.h"
#include "src/train/train_device.h"
#include "src/train/trainer.h"

namespace {

// Peak resident set of this process, bytes (Linux /proc/self/status VmHWM).
long long peak_rss() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      long long kb = 0;
      in >> kb;
      return kb * 1024;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  zt::comm::MpiRuntime rt(argc, argv);
  return rt.run_guarded([&] {
    std::vector<std::string> flags = {"--mock-data", "--train-iters", "1"};
    for (int i = 1; i < argc; ++i) flags.emplace_back(argv[i]);
    std::vector<std::string_view> args(flags.begin(), flags.end());
    zt::TrainOptions o;
    zt::parse_train_options(args, o);
    zt::validate_train_options(o, zt::data_parallel_size(o, rt.world_size()));
    zt::resolve_device(o.device);
    zt::TrainDevice device(o, &rt);
    zt::Trainer trainer(o, device.context(), device.topology());
    size_t state_bytes = 0;
    for (const zt::Tensor& s : trainer.optimizer().owned_state()) state_bytes += s.bytes();
    const long long rss_before = peak_rss();
    device.topology()->host_world().barrier();
    const auto t0 = std::chrono::steady_clock::now();
    zt::LoadAccounting acct;
    const bool save = !o.save.empty();
    if (save)
      zt::save_checkpoint(o.save, trainer);
    else
      zt::load_checkpoint(o.load, trainer, &acct);
    device.topology()->host_world().barrier();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const nlohmann::json j = {
        {"bench", save ? "checkpoint_save" : "checkpoint_load"},
        {"rank", rt.rank()},
        {"tp", device.topology()->tp_size()},
        {"dp", device.topology()->dp_size()},
        {"zero_stage", o.zero_stage},
        {"num_parameters", trainer.config().num_parameters()},
        {"seconds", s},
        {"state_bytes", state_bytes},
        {"state_mb_per_s", static_cast<double>(state_bytes) / 1e6 / s},
        {"peak_rss_before", rss_before},
        {"peak_rss_after", peak_rss()},
        {"loader_peak_bytes", acct.peak},
        {"loader_bytes_read", acct.bytes_read},
    };
    std::printf("%s\n", j.dump().c_str());
    return 0;
  });
}
