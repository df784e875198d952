#pragma once
// CheckpointSaver: the training loop's saves, synchronous or (--async-save) in the background.
//
// An asynchronous save begins the save (collective: the directory made, meta.json's record
// taken), copies the rank's states into a host snapshot (MemoryPool category HostSnapshot,
// allocated once when the saver is made, so the planner's count is its peak) and hands the
// shard to a writer thread, which writes and fsyncs it from the snapshot while training goes
// on. Where the host reads the states directly (CPU) the thread takes the snapshot too, during
// the next step's forward and backward, and the step's update waits for it
// (wait_for_snapshot). The thread never communicates: publishing needs every rank's header
// checksum, so the ranks agree the writes are done at a collective of their own — at a step
// boundary once every rank's write has finished (finish_if_written), or by waiting (wait: the next
// save, a stop, the end of the run). Only then does rank 0 write meta.json and move `latest`, so a
// process that dies during the background write leaves the previous checkpoint as `latest`. The
// files are byte-identical to a synchronous save of the same step: both go through write_shard, and
// the snapshot holds the states' bytes as they were when the step ended.
#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "kernels/backend.h"
#include "src/checkpoint/checkpoint.h"
#include "src/checkpoint/save_parts.h"
#include "src/core/memory_pool.h"

namespace zt {

// A published save: its iteration directory, how long training waited for it and how long the
// shard write took (each the maximum over ranks).
struct SaveRecord {
  int iteration = 0;
  std::string where;
  bool async = false;
  double stall_s = 0, write_s = 0;
};

class CheckpointSaver {
 public:
  // A training run's saver: synchronous, or when `async` with a host snapshot (from ctx.host())
  // of what `optimizer` owns where data-parallel rank `dp_rank` writes it.
  CheckpointSaver(const DeviceContext& ctx, bool async, ZeroOptimizer& optimizer, int dp_rank);
  // Joins a write still under way; nothing is published (that takes every rank).
  ~CheckpointSaver();
  CheckpointSaver(const CheckpointSaver&) = delete;
  CheckpointSaver& operator=(const CheckpointSaver&) = delete;

  bool async() const { return async_; }

  // Collective over the world: a checkpoint of `s`'s step into `dir`. Synchronous: written and
  // published on return (the record); asynchronous: a pending save is finished first (its
  // record is returned), then the snapshot taken and the write started.
  std::optional<SaveRecord> save(const std::string& dir, const CheckpointState& s,
                                 const SaveHooks& hooks);
  // Where the host reads the states directly (the CPU backend) the writer thread itself takes
  // the snapshot, while the next step's forward and backward run (they read the fp32 master and
  // Adam moments, never change them): the optimizer step must wait for it. Returns at once when
  // no snapshot is being taken.
  void wait_for_snapshot();
  // Whether a background write awaits publishing (the same on every rank).
  bool pending() const { return pending_.has_value(); }
  // Collective while pending: waits for this rank's write, then publishes.
  std::optional<SaveRecord> wait(comm::Communicator& world);
  // Collective while pending: publishes when every rank's write has finished, else returns
  // nothing at once (one all-reduce of a flag).
  std::optional<SaveRecord> finish_if_written(comm::Communicator& world);

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    SaveInProgress save;
    SaveHooks hooks;
    double stall_s = 0;  // so far: the snapshot, the step boundaries' checks
  };
  bool async_ = false;
  Buffer snapshot_;
  std::optional<Pending> pending_;
  // Set by the writer thread: its shard's checksum, its time, what it threw.
  uint32_t crc_ = 0;
  double write_s_ = 0;
  std::exception_ptr error_;
  std::atomic<bool> written_{false};
  std::future<void> snapshot_taken_;  // valid while the writer thread copies the states
  std::jthread writer_;
  SaveRecord publish(comm::Communicator& world, double stall_s);
};

}  // namespace zt
