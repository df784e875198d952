#pragma once
// Fault injection for the failure tests, through the Trainer's hooks. ZT_INJECT_FAULT (read by
// zerotron train) or a test names one fault as KIND:RANK:STEP:
//   throw                world rank RANK throws in the middle of step STEP
//   hang                 it stops participating there (never joins a collective again)
//   stop                 it stops there with SIGSTOP (every thread frozen: it answers nothing)
//   diverge              it calls a barrier on the world group there, which no other rank calls
//                        (control flow that diverged), and waits in it
//   inf                  its gradients of step STEP are infinite (an fp16 overflow on one rank)
//   poison               STEP is a training-stream sample position: every step in which it
//                        reads that sample starts its backward from NaN (a bad batch)
//   kill-in-save         it is killed (SIGKILL) while saving step STEP's checkpoint, once its
//                        shard is on disk and before the checkpoint is published
//   slow-save            each piece of its shard written while saving step STEP's checkpoint
//                        (STEP 0: every checkpoint) takes 3 s longer (a slow filesystem: the
//                        progress lines' and the clean stops' tests)
//   kill-in-write        it is killed (SIGKILL) in the middle of writing its shard of step
//                        STEP's checkpoint, after the first piece (with --async-save on the
//                        background writer, while training goes on)
//   kill-in-offload      it is killed (SIGKILL) as step STEP's optimizer starts writing back
//                        the first chunk of its states swapped to NVMe (--offload-optimizer nvme)
//   kill-before-rename, kill-after-exchange, kill-before-latest, kill-before-prune
//                        it (rank 0, the one that publishes) is killed at that point of
//                        publishing step STEP's checkpoint
#include <cstdint>
#include <string>

#include "src/checkpoint/directory.h"
#include "src/comm/communicator.h"
#include "src/train/trainer_hooks.h"

namespace zt {

struct Fault {
  enum Kind : uint8_t {
    Throw,
    Hang,
    Inf,
    Poison,
    KillInSave,
    SlowSave,
    KillInPublish,
    KillInWrite,
    KillInOffload,
    Stop,
    Diverge
  } kind = Throw;
  int rank = -1, step = -1;
  PublishPoint point = PublishPoint::BeforeRename;  // KillInPublish
};

// KIND:RANK:STEP; InputError for anything else.
Fault parse_fault(const std::string& spec);
// The hooks that make world rank `rank` fail as `fault` says (none on the other ranks). `world`
// is the group a diverging rank calls its barrier on (diverge does nothing without it).
TrainerHooks fault_hooks(const Fault& fault, int rank, comm::Communicator* world = nullptr);
// ZT_INJECT_FAULT's hooks for world rank `rank`; none when it is unset.
TrainerHooks fault_hooks_from_env(int rank, comm::Communicator* world = nullptr);

}  // namespace zt
