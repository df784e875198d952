#include "src/faults/fault_injection.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <utility>

#include "src/core/error.h"

namespace zt {

Fault parse_fault(const std::string& spec) {
  const size_t a = spec.find(':'), b = spec.rfind(':');
  ZT_REQUIRE(a != std::string::npos && b > a, "ZT_INJECT_FAULT must be KIND:RANK:STEP");
  const std::string kind = spec.substr(0, a);
  constexpr std::pair<std::string_view, Fault::Kind> kKinds[] = {
      {"throw", Fault::Throw},
      {"hang", Fault::Hang},
      {"inf", Fault::Inf},
      {"poison", Fault::Poison},
      {"kill-in-save", Fault::KillInSave},
      {"slow-save", Fault::SlowSave},
      {"kill-in-write", Fault::KillInWrite},
      {"kill-in-offload", Fault::KillInOffload},
      {"stop", Fault::Stop},
      {"diverge", Fault::Diverge}};
  // Rank 0 dies between these steps of publishing a checkpoint.
  constexpr std::pair<std::string_view, PublishPoint> kPoints[] = {
      {"kill-before-rename", PublishPoint::BeforeRename},
      {"kill-after-exchange", PublishPoint::AfterExchange},
      {"kill-before-latest", PublishPoint::BeforeLatest},
      {"kill-before-prune", PublishPoint::BeforePrune}};
  Fault f;
  bool known = false;
  for (const auto& [name, k] : kKinds)
    if (kind == name) {
      f.kind = k;
      known = true;
    }
  for (const auto& [name, point] : kPoints)
    if (kind == name) {
      f.kind = Fault::KillInPublish;
      f.point = point;
      known = true;
    }
  ZT_REQUIRE(
      known,
      "ZT_INJECT_FAULT kind must be throw, hang, inf, poison, kill-in-save, slow-save, "
      "kill-in-write, kill-in-offload, stop, diverge, kill-before-rename, kill-after-exchange, "
      "kill-before-latest or kill-before-prune");
  f.rank = std::stoi(spec.substr(a + 1, b - a - 1));
  f.step = std::stoi(spec.substr(b + 1));
  return f;
}

TrainerHooks fault_hooks(const Fault& fault, int rank, comm::Communicator* world) {
  TrainerHooks h;
  if (rank != fault.rank) return h;
  const int at = fault.step;
  switch (fault.kind) {
    case Fault::Throw:
      h.mid_step = [at](int step) {
        if (step == at)
          throw Error("injected fault (ZT_INJECT_FAULT) in the middle of step " +
                      std::to_string(at));
      };
      break;
    case Fault::Hang:
      h.mid_step = [at](int step) {
        if (step != at) return;
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // never joins again
      };
      break;
    case Fault::Stop:
      h.mid_step = [at](int step) {
        if (step == at) std::raise(SIGSTOP);
      };
      break;
    case Fault::Diverge:
      if (world == nullptr) break;
      h.mid_step = [at, world](int step) {
        if (step == at) world->barrier();  // no other rank joins it
      };
      break;
    case Fault::Inf:
      h.loss_gradient = [at](int step, float dloss) { return step == at ? INFINITY : dloss; };
      break;
    case Fault::Poison:
      h.poisoned = [at](int64_t sample) { return sample == at; };
      break;
    case Fault::KillInSave:
      h.save = [at](int iteration) {
        SaveHooks s;
        // After this rank's shard is on disk, before the rename.
        if (iteration == at) s.after_shard = [] { std::raise(SIGKILL); };
        return s;
      };
      break;
    case Fault::SlowSave:
      h.save = [at](int iteration) {
        SaveHooks s;
        if (iteration == at || at == 0)
          s.progress = [](uint64_t, uint64_t) {
            std::this_thread::sleep_for(std::chrono::seconds(3));
          };
        return s;
      };
      break;
    case Fault::KillInOffload:
      h.optimizer_write_back = [at](int step) {
        if (step == at) std::raise(SIGKILL);
      };
      break;
    case Fault::KillInWrite:
      h.save = [at](int iteration) {
        SaveHooks s;
        if (iteration == at)
          s.progress = [](uint64_t done, uint64_t total) {
            if (done < total) std::raise(SIGKILL);
          };
        return s;
      };
      break;
    case Fault::KillInPublish:
      h.save = [at, point = fault.point](int iteration) {
        SaveHooks s;
        if (iteration == at)
          s.at_publish = [point](PublishPoint p) {
            if (p == point) std::raise(SIGKILL);
          };
        return s;
      };
      break;
  }
  return h;
}

TrainerHooks fault_hooks_from_env(int rank, comm::Communicator* world) {
  const char* spec = std::getenv("ZT_INJECT_FAULT");
  if (spec == nullptr) return {};
  return fault_hooks(parse_fault(spec), rank, world);
}

}  // namespace zt
