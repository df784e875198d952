#include "src/zero/partition.h"

#include <algorithm>

#include "src/core/error.h"

namespace zt {

Partition::Partition(const ParamLayout& layout, int dp_size, int dp_rank, int64_t unit_elems)
    : dp_(dp_size), rank_(dp_rank) {
  ZT_CHECK(dp_size >= 1 && dp_rank >= 0 && dp_rank < dp_size, "bad dp rank {} of {}", dp_rank,
           dp_size);
  const int64_t quantum = kAlign * dp_;
  const int64_t unit = std::max(quantum, unit_elems / quantum * quantum);
  const auto& blocks = layout.blocks();
  for (size_t b = 0; b < blocks.size(); ++b) {
    const int64_t len = (blocks[b].numel() + quantum - 1) / quantum * quantum;
    padded_begin_.push_back(padded_numel_);
    padded_len_.push_back(len);
    layout_begin_.push_back(blocks[b].begin);
    max_block_ = std::max(max_block_, len);
    const int first = static_cast<int>(units_.size());
    for (int64_t at = 0; at < len; at += unit) {
      PartitionUnit u;
      u.block = static_cast<int>(b);
      u.padded_begin = padded_numel_ + at;
      u.padded_len = std::min(unit, len - at);
      u.part_len = u.padded_len / dp_;
      u.shard_offset = shard_numel_;
      shard_numel_ += u.part_len;
      units_.push_back(u);
    }
    block_units_.emplace_back(first, static_cast<int>(units_.size()));
    padded_numel_ += len;
  }
  // This rank's real elements: intersect each of its parts with the parameters of the block.
  const auto& params = layout.params();
  std::vector<std::vector<size_t>> params_of_block(blocks.size());
  for (size_t p = 0; p < params.size(); ++p)
    params_of_block[static_cast<size_t>(params[p].block)].push_back(p);
  for (size_t ui = 0; ui < units_.size(); ++ui) {
    const auto& u = units_[ui];
    const int64_t block_begin = padded_begin_[static_cast<size_t>(u.block)];
    const int64_t lo = u.padded_begin + int64_t{rank_} * u.part_len - block_begin;
    const int64_t hi = lo + u.part_len;  // block-relative
    for (const size_t p : params_of_block[static_cast<size_t>(u.block)]) {
      const int64_t p0 = params[p].offset - layout_begin_[static_cast<size_t>(u.block)];
      const int64_t a = std::max(lo, p0), e = std::min(hi, p0 + params[p].numel());
      if (a >= e) continue;
      segments_.push_back(ShardSegment{u.shard_offset + (a - lo),
                                       layout_begin_[static_cast<size_t>(u.block)] + a, e - a,
                                       static_cast<int>(p), static_cast<int>(ui)});
    }
  }
}

int64_t Partition::padded_of(int64_t layout_offset) const {
  const auto it = std::upper_bound(layout_begin_.begin(), layout_begin_.end(), layout_offset);
  const auto b = static_cast<size_t>(it - layout_begin_.begin() - 1);
  return padded_begin_[b] + (layout_offset - layout_begin_[b]);
}

}  // namespace zt
