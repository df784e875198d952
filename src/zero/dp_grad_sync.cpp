#include "src/zero/dp_grad_sync.h"

#include <algorithm>

namespace zt {

DpGradSync::DpGradSync(comm::Communicator& dp, const ParamLayout& layout, Tensor grads,
                       int64_t bucket_elems, bool overlap)
    : dp_(dp), grads_(grads), buckets_(layout, bucket_elems), overlap_(overlap) {
  const size_t n = buckets_.buckets().size();
  handles_.resize(n);
  launched_.resize(n);
  completed_.resize(n);
  started_.assign(n, 0);
  finished_.assign(n, 0);
}

void DpGradSync::begin_backward(bool last_microbatch) {
  active_ = last_microbatch;
  if (!active_) return;
  buckets_.reset();
  std::fill(started_.begin(), started_.end(), 0);
  std::fill(finished_.begin(), finished_.end(), 0);
}

void DpGradSync::launch(int k) {
  // At most kInFlight all-reduces at once: a half one holds an fp32 staging copy in the
  // communicator, so the staging stays a constant number of buckets.
  size_t in_flight = 0, oldest = handles_.size();
  for (size_t j = 0; j < handles_.size(); ++j)
    if (started_[j] && !finished_[j]) {
      ++in_flight;
      if (oldest == handles_.size() || launched_[j] < launched_[oldest]) oldest = j;
    }
  if (in_flight >= static_cast<size_t>(kInFlight)) {
    handles_[oldest].wait();
    finished_[oldest] = 1;
    completed_[oldest] = Clock::now();
  }
  const auto& b = buckets_.buckets()[static_cast<size_t>(k)];
  const auto i = static_cast<size_t>(k);
  started_[i] = 1;
  launched_[i] = Clock::now();
  handles_[i] = dp_.all_reduce_async(grads_.slice(b.begin, {b.end - b.begin}));
}

void DpGradSync::poll() {
  for (size_t i = 0; i < handles_.size(); ++i) {
    if (!started_[i] || finished_[i]) continue;
    if (handles_[i].test()) {
      finished_[i] = 1;
      completed_[i] = Clock::now();
    }
  }
}

void DpGradSync::block_done(int block) {
  if (!active_) return;
  ready_.clear();
  buckets_.block_done(block, ready_);
  if (overlap_)
    for (int k : ready_) launch(k);
  poll();
}

void DpGradSync::finish() {
  const auto backward_end = Clock::now();
  poll();
  // Whatever completed by now completed behind backward.
  for (size_t i = 0; i < handles_.size(); ++i)
    if (started_[i] && !finished_[i] && handles_[i].test()) {
      finished_[i] = 1;
      completed_[i] = backward_end;
    }
  for (size_t k = 0; k < handles_.size(); ++k)
    if (!started_[k]) launch(static_cast<int>(k));
  for (size_t i = 0; i < handles_.size(); ++i) {
    if (finished_[i]) continue;
    handles_[i].wait();
    finished_[i] = 1;
    completed_[i] = Clock::now();
  }
  const auto done = Clock::now();
  using Ms = std::chrono::duration<double, std::milli>;
  timing_ = GradSyncTiming{};
  timing_.buckets = static_cast<int>(handles_.size());
  timing_.exposed_ms = Ms(done - backward_end).count();
  double hidden = 0;
  for (size_t i = 0; i < handles_.size(); ++i) {
    timing_.comm_ms += Ms(completed_[i] - launched_[i]).count();
    hidden +=
        Ms(std::max(launched_[i], std::min(completed_[i], backward_end)) - launched_[i]).count();
  }
  timing_.hidden_fraction = timing_.comm_ms > 0 ? hidden / timing_.comm_ms : 0;
  active_ = false;
}

}  // namespace zt
