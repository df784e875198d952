#pragma once
// Data-parallel gradient synchronisation for stage 0: as backward completes each constant-size
// bucket of the flat gradient buffer, its sum over the data-parallel group is started
// asynchronously (--overlap-comm), so communication runs behind the rest of backward; the
// optimizer step waits for what is left. The loss is already divided by the global token
// count, so a sum is the global mean gradient.
#include <cstdint>
#include <vector>

#include "src/comm/communicator.h"
#include "src/zero/grad_buckets.h"

namespace zt {

// Measured on the communicator's timeline (src/comm/timeline.h: host times on MPI, CUDA events
// on NCCL), read after the step.
struct GradSyncTiming {
  int buckets = 0;
  double comm_ms = 0;     // sum over buckets of start-to-completion time
  double exposed_ms = 0;  // time the step waited for communication after backward ended
  // Fraction of bucket communication time that elapsed while backward was still running.
  double hidden_fraction = 0;
  static GradSyncTiming from(int buckets, const comm::OverlapTiming& t) {
    return {buckets, t.comm_ms, t.exposed_ms, t.hidden_fraction};
  }
};

class DpGradSync {
 public:
  static constexpr int kInFlight = 2;  // bucket all-reduces in flight at once

  // `expert`: the group the expert parameters' buckets are summed over (null: dp).
  DpGradSync(comm::Communicator& dp, const ParamLayout& layout, Tensor grads, int64_t bucket_elems,
             bool overlap, comm::Communicator* expert = nullptr);

  // Before a micro-batch's backward; only the last micro-batch of a step reduces.
  void begin_backward(bool last_microbatch);
  void block_done(int block);
  // Reduces every bucket not yet started and waits for all of them.
  void finish();
  // The last step's (reads its device times; call after the step).
  GradSyncTiming timing() const;

 private:
  void launch(int bucket);
  void poll();
  void wait(size_t bucket, comm::StampRef needed);

  comm::Communicator& dp_;
  comm::Communicator& expert_;
  Tensor grads_;
  GradBuckets buckets_;
  bool overlap_;
  bool active_ = false;
  std::vector<int> ready_;
  std::vector<comm::Handle> handles_;
  std::vector<uint64_t> order_;  // launch order
  uint64_t launches_ = 0;
  std::vector<char> started_, finished_;
  comm::OverlapLog log_;
};

}  // namespace zt
