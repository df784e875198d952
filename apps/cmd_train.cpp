// zerotron train: MPI up, every flag parsed and validated and every data file opened and checked
// (identically on every rank, before anything is allocated), then the process groups, then
// training.
#include <chrono>
#include <filesystem>
#include "apps/commands.h"
#include "src/comm/runtime.h"
#include "src/comm/topology.h"
#include "src/core/log.h"
#include "src/train/checkpoint.h"
#include "src/train/options.h"
#include "src/train/train_data.h"
#include "src/train/train_device.h"
#include "src/train/trainer.h"

namespace zt::app {

int train(Args args) {
  TrainOptions o;
  if (!parse_train_options(args, o)) return 0;
  int argc = 0;
  char** argv = nullptr;
  comm::MpiRuntime rt(argc, argv);
  return rt.run_guarded([&] {
    log::set_rank(rt.rank(), rt.world_size());
    validate_train_options(o, data_parallel_size(o, rt.world_size()));
    TrainData data = open_train_data(o);  // sets o.vocab_size from the tokenizer
    validate_tensor_parallel(gpt_config_from(o), o.tensor_model_parallel_size);
    resolve_device(o.device);  // --device cuda without the backend or a GPU: exit 2 here
    rt.set_comm_timeout(o.comm_timeout);
    // The backend, its memory and the process groups (the GPU of this local rank with --device
    // cuda); destroyed after the trainer.
    TrainDevice device(o, &rt);
    Trainer trainer(o, device.context(), device.topology(), std::move(data));
    if (!o.load.empty()) {
      if (std::filesystem::exists(std::filesystem::path(o.load) / "latest")) {
        const auto t0 = std::chrono::steady_clock::now();
        const int it = load_checkpoint(o.load, trainer);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        log::info(" loaded checkpoint {} at iteration {} ({:.2f} s)", o.load, it, s);
      } else {
        log::info(" no checkpoint in {}: starting from scratch", o.load);
      }
    }
    trainer.run();
    return 0;
  });
}

}  // namespace zt::app
