#include "src/zero/grad_buckets.h"

#include <algorithm>

#include "src/core/error.h"

namespace zt {

GradBuckets::GradBuckets(const ParamLayout& layout, int64_t bucket_elems) {
  ZT_CHECK(bucket_elems > 0, "bucket size must be positive");
  const auto& blocks = layout.blocks();
  buckets_of_block_.resize(blocks.size());
  // The runs of one group in layout order: one run, [0, numel), without expert parameters.
  struct Run {
    int64_t begin, end;
    bool expert;
  };
  std::vector<Run> runs;
  for (const auto& p : layout.params()) {
    if (p.numel() == 0) continue;
    if (runs.empty() || runs.back().expert != p.expert)
      runs.push_back({p.offset, p.offset, p.expert});
    runs.back().end = p.offset + p.numel();
  }
  if (!runs.empty()) runs.front().begin = 0;
  if (!runs.empty()) runs.back().end = layout.numel();
  for (auto r = runs.rbegin(); r != runs.rend(); ++r)
    for (int64_t end = r->end; end > r->begin; end -= bucket_elems) {
      Bucket b;
      b.end = end;
      b.begin = std::max<int64_t>(r->begin, end - bucket_elems);
      b.expert = r->expert;
      b.first_block = -1;
      for (size_t i = 0; i < blocks.size(); ++i) {
        if (blocks[i].end <= b.begin || blocks[i].begin >= b.end || blocks[i].numel() == 0)
          continue;
        if (b.first_block < 0) b.first_block = static_cast<int>(i);
        b.last_block = static_cast<int>(i);
        buckets_of_block_[i].push_back(static_cast<int>(buckets_.size()));
      }
      buckets_.push_back(b);
    }
  reset();
}

void GradBuckets::reset() {
  pending_.assign(buckets_.size(), 0);
  for (size_t k = 0; k < buckets_.size(); ++k)
    pending_[k] = buckets_[k].last_block - buckets_[k].first_block + 1;
  done_.assign(buckets_of_block_.size(), 0);
}

void GradBuckets::block_done(int block, std::vector<int>& ready) {
  const auto b = static_cast<size_t>(block);
  ZT_CHECK(b < done_.size(), "block {} out of range", block);
  if (done_[b]) return;  // a block reports once per backward pass
  done_[b] = 1;
  for (int k : buckets_of_block_[b])
    if (--pending_[static_cast<size_t>(k)] == 0) ready.push_back(k);
}

}  // namespace zt
