#include "src/zero/partition.h"

#include <algorithm>

#include "src/core/error.h"

namespace zt {

Partition::Partition(const ParamLayout& layout, int dp_size, int dp_rank, int64_t unit_elems,
                     int edp_size, int edp_rank)
    : dp_(dp_size),
      rank_(dp_rank),
      edp_(edp_size == 0 ? dp_size : edp_size),
      edp_rank_(edp_size == 0 ? dp_rank : edp_rank) {
  ZT_CHECK(dp_size >= 1 && dp_rank >= 0 && dp_rank < dp_size, "bad dp rank {} of {}", dp_rank,
           dp_size);
  ZT_CHECK(edp_ >= 1 && edp_rank_ >= 0 && edp_rank_ < edp_ && dp_ % edp_ == 0,
           "bad expert-data-parallel rank {} of {} (dp {})", edp_rank_, edp_, dp_);
  ZT_CHECK(unit_elems >= 1, "partition unit must be positive");
  // Dense units are padded to a multiple of this; expert ones to a divisor of it (edp | dp).
  const int64_t quantum = kAlign * dp_;
  const auto& blocks = layout.blocks();
  const auto& params = layout.params();
  std::vector<std::vector<size_t>> params_of_block(blocks.size());
  for (size_t p = 0; p < params.size(); ++p)
    params_of_block[static_cast<size_t>(params[p].block)].push_back(p);
  for (size_t b = 0; b < blocks.size(); ++b) {
    padded_begin_.push_back(padded_numel_);
    const int first = static_cast<int>(units_.size());
    int64_t begin = blocks[b].begin, len = 0;
    bool expert = false;  // the group of the unit being filled
    auto close = [&] {
      if (len == 0) return;
      PartitionUnit u;
      u.block = static_cast<int>(b);
      u.layout_begin = begin;
      u.real_len = len;
      u.expert = expert;
      u.parts = expert ? edp_ : dp_;
      u.part = expert ? edp_rank_ : rank_;
      const int64_t q = kAlign * u.parts;
      u.padded_begin = padded_numel_;
      u.padded_len = (len + q - 1) / q * q;
      u.part_len = u.padded_len / u.parts;
      has_expert_ = has_expert_ || expert;
      u.shard_offset = shard_numel_;
      shard_numel_ += u.part_len;
      padded_numel_ += u.padded_len;
      unit_layout_begin_.push_back(begin);
      unit_index_.push_back(static_cast<int>(units_.size()));
      units_.push_back(u);
      begin += len;
      len = 0;
    };
    for (const size_t p : params_of_block[b]) {
      const ParamSpec& spec = params[p];
      const int64_t step = spec.chunk_rows(unit_elems) * spec.row_len();
      for (int64_t at = 0; at < spec.numel(); at += step) {
        const int64_t n = std::min(step, spec.numel() - at);
        if (len > 0 && (len + n > unit_elems || spec.expert != expert)) close();
        expert = spec.expert;
        len += n;
      }
    }
    close();
    block_units_.emplace_back(first, static_cast<int>(units_.size()));
    padded_len_.push_back(padded_numel_ - padded_begin_.back());
  }
  // Buffers are sized by the capacity the flag allows, not by how this model's rows happen to
  // pack: the same for any hidden size, vocabulary or depth that fills a unit. An expert unit
  // pads to a divisor of the dense quantum, so it fits too.
  int64_t longest_row = 0, largest_block = 0;
  for (const auto& p : params) longest_row = std::max(longest_row, p.row_len());
  for (const auto& b : blocks) largest_block = std::max(largest_block, b.numel());
  auto round_up = [&](int64_t n) { return (n + quantum - 1) / quantum * quantum; };
  max_unit_ = std::min(round_up(std::max(unit_elems, longest_row)), round_up(largest_block));
  for (const auto& u : units_) max_part_ = std::max(max_part_, u.part_len);
  // This rank's real elements: intersect each of its parts with the parameters of the unit.
  for (size_t ui = 0; ui < units_.size(); ++ui) {
    const auto& u = units_[ui];
    const int64_t lo = u.layout_begin + int64_t{u.part} * u.part_len;
    const int64_t hi = std::min(lo + u.part_len, u.layout_begin + u.real_len);
    for (const size_t p : params_of_block[static_cast<size_t>(u.block)]) {
      const int64_t a = std::max(lo, params[p].offset);
      const int64_t e = std::min(hi, params[p].offset + params[p].numel());
      if (a >= e) continue;
      segments_.push_back(ShardSegment{u.shard_offset + (a - lo), a, e - a, static_cast<int>(p),
                                       static_cast<int>(ui)});
    }
  }
}

int Partition::unit_of(int64_t layout_offset) const {
  const auto it =
      std::upper_bound(unit_layout_begin_.begin(), unit_layout_begin_.end(), layout_offset);
  ZT_CHECK(it != unit_layout_begin_.begin(), "element {} is in no unit", layout_offset);
  const int u = unit_index_[static_cast<size_t>(it - unit_layout_begin_.begin() - 1)];
  const auto& unit = units_[static_cast<size_t>(u)];
  ZT_CHECK(layout_offset < unit.layout_begin + unit.real_len, "element {} is in no unit",
           layout_offset);
  return u;
}

int64_t Partition::padded_of(int64_t layout_offset) const {
  const auto& u = units_[static_cast<size_t>(unit_of(layout_offset))];
  return u.padded_begin + (layout_offset - u.layout_begin);
}

}  // namespace zt
