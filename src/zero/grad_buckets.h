#pragma once
// Gradient buckets: constant-size ranges of the flat gradient buffer (ZeRO-R's CB, DeepSpeed's
// reduce_bucket_size), cut from the end of the buffer so the first bucket to fill is the first
// to go: backward completes blocks from the last layer down. A bucket is ready once every block
// it overlaps has reported its gradient complete; readiness does not depend on order.
// A bucket never crosses a boundary between parameter groups (dense, expert: ParamSpec::expert),
// since the groups reduce over different communicators: each run of one group's parameters is
// cut from its end.
#include <cstdint>
#include <vector>

#include "src/model/param_layout.h"

namespace zt {

class GradBuckets {
 public:
  struct Bucket {
    int64_t begin = 0, end = 0;  // elements of the flat buffer
    int first_block = 0, last_block = 0;
    bool expert = false;  // of the expert parameter group: reduced over edp
  };
  GradBuckets(const ParamLayout& layout, int64_t bucket_elems);

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Starts a new backward pass: no block is complete.
  void reset();
  // Marks `block` complete; appends to `ready` the buckets that just became ready.
  void block_done(int block, std::vector<int>& ready);

 private:
  std::vector<Bucket> buckets_;
  std::vector<std::vector<int>> buckets_of_block_;
  std::vector<int> pending_;  // per bucket: blocks not yet complete
  std::vector<char> done_;    // per block
};

}  // namespace zt
