#pragma once
// Data-parallel gradient synchronisation for stage 0: as backward completes each constant-size
// bucket of the flat gradient buffer, its sum over the data-parallel group is started
// asynchronously (--overlap-comm), so communication runs behind the rest of backward; the
// optimizer step waits for what is left. The loss is already divided by the global token
// count, so a sum is the global mean gradient.
#include <chrono>
#include <vector>

#include "src/comm/communicator.h"
#include "src/zero/grad_buckets.h"

namespace zt {

struct GradSyncTiming {
  int buckets = 0;
  double comm_ms = 0;     // sum over buckets of launch-to-completion time
  double exposed_ms = 0;  // time the step waited for communication after backward ended
  // Fraction of bucket communication time that elapsed while backward was still running.
  double hidden_fraction = 0;
};

class DpGradSync {
 public:
  static constexpr int kInFlight = 2;  // bucket all-reduces in flight at once

  DpGradSync(comm::Communicator& dp, const ParamLayout& layout, Tensor grads, int64_t bucket_elems,
             bool overlap);

  // Before a micro-batch's backward; only the last micro-batch of a step reduces.
  void begin_backward(bool last_microbatch);
  void block_done(int block);
  // Reduces every bucket not yet started and waits for all of them.
  void finish();
  const GradSyncTiming& timing() const { return timing_; }

 private:
  using Clock = std::chrono::steady_clock;
  void launch(int bucket);
  void poll();

  comm::Communicator& dp_;
  Tensor grads_;
  GradBuckets buckets_;
  bool overlap_;
  bool active_ = false;
  std::vector<int> ready_;
  std::vector<comm::Handle> handles_;
  std::vector<Clock::time_point> launched_, completed_;
  std::vector<char> started_, finished_;
  GradSyncTiming timing_;
};

}  // namespace zt
