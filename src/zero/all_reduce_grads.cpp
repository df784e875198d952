#include "src/zero/all_reduce_grads.h"

#include <algorithm>

#include "src/model/param_ref.h"
#include "src/zero/precision.h"

namespace zt {

AllReduceGrads::AllReduceGrads(const ParamLayout& layout, DType working, const DeviceContext& ctx,
                               comm::Communicator* dp, int64_t bucket_elems, bool overlap,
                               comm::Communicator* expert_dp)
    : layout_(layout), working_(working), be_(ctx.backend()) {
  grads_ = ctx.pool().allocate({layout_.numel()}, working_, MemCategory::Grads);
  if (half()) staging_ = GradStaging(ctx, layout_, bucket_elems);
  for (const auto& b : layout_.blocks()) pending_.push_back(b.numel());
  if (dp == nullptr || dp->size() <= 1) return;
  if (half()) {
    const GradBuckets buckets(layout_, bucket_elems);
    int64_t bucket = 0;
    for (const auto& k : buckets.buckets()) bucket = std::max(bucket, k.end - k.begin);
    dp->reserve_staging(static_cast<size_t>(bucket), DpGradSync::kInFlight);
    if (expert_dp != nullptr && expert_dp != dp)
      expert_dp->reserve_staging(static_cast<size_t>(bucket), DpGradSync::kInFlight);
  }
  sync_ = std::make_unique<DpGradSync>(*dp, layout_, grads(), bucket_elems, overlap, expert_dp);
}

float* AllReduceGrads::open(const Span& s) {
  if (!half()) return static_cast<float*>(grads_.data()) + layout_offset(layout_, s);
  return staging_.open(s);
}

void AllReduceGrads::close(const Span& s) {
  if (half()) {
    accumulate_f32(be_, at(grads_.data(), working_, layout_offset(layout_, s)), working_,
                   staging_.find(s), s.len);
    staging_.close(s);
  }
  int64_t& left = pending_[static_cast<size_t>(s.block)];
  left -= s.len;
  ZT_CHECK(left >= 0, "block {}: gradient elements closed twice", s.block);
  if (left > 0) return;
  left = layout_.blocks()[static_cast<size_t>(s.block)].numel();
  if (sync_) sync_->block_done(s.block);
}

Tensor AllReduceGrads::local_grads(int64_t layout_offset, int64_t len) {
  return Tensor(at(grads_.data(), working_, layout_offset), {len}, working_, be_.device());
}

void AllReduceGrads::begin_microbatch(bool last) {
  if (sync_) sync_->begin_backward(last);
}

void AllReduceGrads::zero() {
  be_.fill_zero(grads_.data(), grads_.bytes());
}

void AllReduceGrads::finish() {
  if (sync_) sync_->finish();
}

const void* AllReduceGrads::grad(const ShardSegment& s) const {
  return at(grads_.data(), working_, s.layout_offset);
}

GradSyncTiming AllReduceGrads::timing() const {
  return sync_ ? sync_->timing() : GradSyncTiming{};
}

}  // namespace zt
