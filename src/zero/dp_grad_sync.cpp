#include "src/zero/dp_grad_sync.h"

#include <algorithm>

namespace zt {

DpGradSync::DpGradSync(comm::Communicator& dp, const ParamLayout& layout, Tensor grads,
                       int64_t bucket_elems, bool overlap, comm::Communicator* expert)
    : dp_(dp),
      expert_(expert != nullptr ? *expert : dp),
      grads_(grads),
      buckets_(layout, bucket_elems),
      overlap_(overlap) {
  const size_t n = buckets_.buckets().size();
  handles_.resize(n);
  order_.assign(n, 0);
  started_.assign(n, 0);
  finished_.assign(n, 0);
}

void DpGradSync::begin_backward(bool last_microbatch) {
  active_ = last_microbatch;
  if (!active_) return;
  buckets_.reset();
  std::fill(started_.begin(), started_.end(), 0);
  std::fill(finished_.begin(), finished_.end(), 0);
  log_.clear(dp_.stamp());
}

void DpGradSync::wait(size_t i, comm::StampRef needed) {
  handles_[i].wait();
  finished_[i] = 1;
  log_.add(handles_[i], std::move(needed));
}

void DpGradSync::launch(int k) {
  // At most kInFlight all-reduces at once: a half one holds an fp32 staging copy in the
  // communicator, so the staging stays a constant number of buckets.
  size_t in_flight = 0, oldest = handles_.size();
  for (size_t j = 0; j < handles_.size(); ++j)
    if (started_[j] && !finished_[j]) {
      ++in_flight;
      if (oldest == handles_.size() || order_[j] < order_[oldest]) oldest = j;
    }
  if (in_flight >= static_cast<size_t>(kInFlight)) wait(oldest, dp_.stamp());
  const auto& b = buckets_.buckets()[static_cast<size_t>(k)];
  const auto i = static_cast<size_t>(k);
  started_[i] = 1;
  order_[i] = ++launches_;
  comm::Communicator& group = b.expert ? expert_ : dp_;
  handles_[i] = group.all_reduce_async(grads_.slice(b.begin, {b.end - b.begin}));
}

void DpGradSync::poll() {
  // Drives progress (the manual mode); the handles keep their own completion times.
  for (size_t i = 0; i < handles_.size(); ++i)
    if (started_[i] && !finished_[i]) (void)handles_[i].test();
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
  const comm::StampRef backward_end = dp_.stamp();
  for (size_t k = 0; k < handles_.size(); ++k)
    if (!started_[k]) launch(static_cast<int>(k));
  for (size_t i = 0; i < handles_.size(); ++i)
    if (!finished_[i]) wait(i, backward_end);
  log_.set_exposed(backward_end, dp_.stamp());
  active_ = false;
}

GradSyncTiming DpGradSync::timing() const {
  return GradSyncTiming::from(static_cast<int>(handles_.size()), log_.read());
}

}  // namespace zt
