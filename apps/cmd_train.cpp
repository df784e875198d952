// zerotron train: MPI up, then every flag parsed and validated and every data file opened and
// checked on every rank before anything is allocated. The ranks agree on the outcome: bad input
// is one line (from the lowest rank that found it) and exit 2 on every rank after a clean
// MPI_Finalize. Then the process groups, then training.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <new>
#include <optional>

#include "apps/commands.h"
#include "src/checkpoint/access_probe.h"
#include "src/checkpoint/checkpoint.h"
#include "src/checkpoint/directory.h"
#include "src/checkpoint/meta.h"
#include "src/comm/nccl_groups.h"
#include "src/comm/placement.h"
#include "src/comm/runtime.h"
#include "src/comm/topology.h"
#include "src/config/deepspeed.h"
#include "src/config/derive.h"
#include "src/config/options.h"
#include "src/config/saved_model.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/faults/fault_injection.h"
#include "src/planner/train_plan.h"
#include "src/train/exit_conditions.h"
#include "src/train/train_data.h"
#include "src/train/train_device.h"
#include "src/train/trainer.h"

namespace zt::app {
namespace {

// A tensor-parallel group over several nodes puts every layer's all-reduce on the network:
// refused (--tp-within-node, the default) or one warning line.
void check_tp_placement(const TrainOptions& o, const comm::MpiRuntime& rt) {
  const comm::ParallelGrid grid(rt.world_size(), o.tensor_model_parallel_size,
                                o.pipeline_model_parallel_size);
  const std::vector<int> spanning = comm::tp_group_spanning_nodes(grid, rt.node_of());
  if (spanning.empty()) return;
  const std::string why = comm::tp_spanning_message(grid, spanning, rt.hosts());
  if (o.tp_within_node) throw InputError(why);
  log::line("zerotron: warning: " + why);
}

}  // namespace

int train(Args args) {
  if (args.size() == 1 && args[0] == "--help-markdown") {  // docs/options.md, without MPI
    std::fputs(train_options_markdown().c_str(), stdout);
    return 0;
  }
  int argc = 0;
  char** argv = nullptr;
  comm::MpiRuntime rt(argc, argv);
  return rt.run_guarded([&] {
    TrainOptions o;
    TrainData data;
    bool help = false;
    std::optional<CheckpointLock> save_lock;  // held until the job ends
    const int verdict = rt.agree_on_input([&] {
      TrainFlags flags = parse_train_flags(
          "train", args, [](std::string_view) { return std::optional<FlagArity>(); });
      help = flags.help;
      if (help) return;
      o = std::move(flags.options);
      // A rank stuck in a check below is bounded by the user's timeout from here on.
      rt.set_comm_timeout(o.comm_timeout);
      // The model of the checkpoint --load resumes, where a flag does not say otherwise.
      if (!o.load.empty()) {
        check_load_readable(o.load);
        if (checkpoint_step(o) || has_latest(o.load)) {
          nlohmann::json meta;
          const std::string where =
              checkpoint_iteration_dir(o.load, checkpoint_step(o), meta) + "/meta.json";
          take_saved_model(read_layout(meta, where).model, flags.given, where, o);
        }
      }
      resolve_micro_batch(o, data_parallel_size(o, rt.world_size()));
      const int dp = derive(o, rt.world_size()).dp;  // every check of the options
      check_tp_placement(o, rt);
      data = open_train_data(o);  // sets o.vocab_size from the tokenizer
      validate_tensor_parallel(gpt_config_from(o), o.tensor_model_parallel_size);
      // --device cuda without the backend or a GPU: exit 2 here
      const bool cpu = resolve_device(o.device) == Device::Cpu;
      // The plan is what the run will allocate: refuse a layout that cannot fit, before it
      // allocates for seconds and dies of std::bad_alloc.
      check_plan_fits(o, dp, memory_budget(o, cpu, rt.local_size()));
      check_offload_fits(o, dp, cpu, rt.local_size());
      // Every rank reaches --save and --load itself: a node without the shared filesystem is
      // named now, not found at the first save hours later.
      if (!o.save.empty()) check_save_writable(o.save);
      if (!o.load.empty()) {
        check_load_readable(o.load);
        // A checkpoint whose parameters this model cannot hold is refused before allocating.
        if (checkpoint_step(o) || has_latest(o.load)) {
          nlohmann::json meta;
          const std::string iter_dir = checkpoint_iteration_dir(o.load, checkpoint_step(o), meta);
          check_checkpoint_model(meta, gpt_config_from(o), iter_dir + "/meta.json");
        }
      }
      // --save is created, tested for writing and locked against a second job now, not found
      // unusable at the first save hours later. Rank 0 alone keeps the directory's bookkeeping.
      if (!o.save.empty() && rt.rank() == 0) {
        prepare_save_dir(o.save);
        save_lock.emplace(o.save);
      }
    });
    if (verdict != 0) return verdict;
    if (help) {
      if (rt.rank() == 0) std::fputs(train_options_help().c_str(), stdout);
      return 0;
    }
    // A clean stop from here on, a load included, takes effect after the first step.
    const StopSignals stop_signals(stops_cleanly_on_signal(o));
    if (!o.save.empty() && rt.world_size() > 1) {
      // Rank 0's probe first, then every other rank looks for it (two agreements: the first
      // is the barrier between writing and looking).
      const std::string probe = shared_probe_path(o.save, launch_job_id());
      const int written = rt.agree_on_input([&] {
        if (rt.rank() == 0) write_shared_probe(probe, o.save);
      });
      if (written != 0) return written;
      const int seen = rt.agree_on_input([&] {
        if (rt.rank() != 0) check_sees_shared_probe(probe, o.save, rt.hosts().at(0));
      });
      std::error_code ec;
      if (rt.rank() == 0) std::filesystem::remove(probe, ec);
      if (seen != 0) return seen;
    }
    log::line(comm::layout_text(
        comm::ParallelGrid(rt.world_size(), o.tensor_model_parallel_size,
                           o.pipeline_model_parallel_size, o.context_parallel_size),
        rt.hosts()));
    // The backend, its memory and the process groups (the GPU of this local rank with --device
    // cuda); destroyed after the trainer. The plan checked above is what the pool will hold, not
    // all the process maps (threads, MPI, libraries): an allocation that still fails here is one
    // line and exit 2 on every rank, not an abort.
    std::optional<TrainDevice> device;
    std::optional<Trainer> trainer;
    const int built = rt.agree_on_input([&] {
      try {
        device.emplace(o, &rt);
        trainer.emplace(o, device->context(), device->topology(), std::move(data));
        // The failure tests' faults (ZT_INJECT_FAULT); nothing when it is unset.
        trainer->set_hooks(
            fault_hooks_from_env(device->topology().rank(), &device->topology().world()));
      } catch (const std::bad_alloc&) {
        throw InputError(
            "out of memory allocating the model, its optimizer states and activations "
            "(std::bad_alloc); use a smaller model, --micro-batch-size or --seq-length, more "
            "ranks, or raise the memory limit (ulimit -v, the container's)");
      }
    });
    if (built != 0) return built;
    if (device->nccl_communicators() > 0) {
      const size_t planned = comm::nccl_planned_bytes(device->nccl_communicators());
      log::info(
          " NCCL: {} communicators, {:.1f} MiB of device memory outside the pool on rank 0 "
          "(its free device memory before and after creating them; planned {:.1f} MiB)",
          device->nccl_communicators(), static_cast<double>(device->nccl_bytes()) / (1 << 20),
          static_cast<double>(planned) / (1 << 20));
      // NCCL connects lazily (a peer's buffers come at the first operation with it): more may
      // follow this measurement, never less.
      if (device->nccl_bytes() > planned)
        log::info(
            " warning: NCCL took more device memory at start-up than planned ({:.1f} > {:.1f} "
            "MiB): leave at least that much of the device outside --device-memory",
            static_cast<double>(device->nccl_bytes()) / (1 << 20),
            static_cast<double>(planned) / (1 << 20));
    }
    if (!o.load.empty()) {
      if (checkpoint_step(o) || has_latest(o.load)) {
        const auto t0 = std::chrono::steady_clock::now();
        int it = 0;
        // A file that fails to read is one line and exit 2 on every rank, as bad input is.
        const int loaded = rt.agree_on_input([&] { it = trainer->load_checkpoint(o.load); });
        if (loaded != 0) return loaded;
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        log::info(" loaded checkpoint {}{} at iteration {} ({:.2f} s)", o.load,
                  o.finetune ? " (weights only: --finetune)" : "", it, s);
      } else {
        log::info(" no checkpoint in {}: starting from scratch", o.load);
      }
    }
    try {
      trainer->run();
    } catch (const RunStopped& e) {
      // Every rank stops at the same step (the overflow and divergence tests are reduced): one
      // line, from the rank that saw the cause, and a clean finalize instead of an abort.
      if (rt.rank() == e.reporter()) log::error_line(e.what());
      return 1;
    }
    return 0;
  });
}

}  // namespace zt::app
