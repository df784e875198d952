#pragma once
// ZeRO's partition of one rank's parameters (its tensor-parallel shard) over the Nd ranks of
// its data-parallel group. The one implementation used by the optimizer, checkpoints and the
// planner.
//
// Each block is cut into units: its parameters' chunks of whole rows (ParamSpec::chunk_rows of
// `unit_elems`, the rule the model acquires and produces gradients by) packed in layout order,
// at most `unit_elems` elements each unless one row is longer. Every unit is padded at its end
// to a multiple of Nd·kAlign elements in a *padded space* and cut into Nd equal parts: part r
// belongs to rank r. A rank's shard is its parts of all units, back to back. A unit is what
// one reduce-scatter or all-gather moves (a constant-size bucket), never crosses a block, and
// holds whole chunks, so every span the model reaches lies in one unit, contiguous.
//
// Parameter groups (docs/design/moe.md): a routed expert's parameters (ParamSpec::expert) are
// identical only on the ranks holding the same experts, the expert-data-parallel group (edp, a
// sub-group of dp). A unit never mixes the groups; an expert unit is padded to a multiple of
// Ne·kAlign and cut into Ne parts (Ne = edp size), part q belonging to edp rank q. Its
// reduce-scatter and all-gather run over edp, a dense unit's over dp.
#include <cstdint>
#include <vector>

#include "src/model/param_layout.h"

namespace zt {

struct PartitionUnit {
  int block = 0;
  int64_t layout_begin = 0;  // its first element in ParamLayout's flat order
  int64_t real_len = 0;      // elements before the padding
  int64_t padded_begin = 0;  // first element in padded space
  int64_t padded_len = 0;    // multiple of parts·kAlign
  int64_t part_len = 0;      // padded_len / parts
  int64_t shard_offset = 0;  // where every rank keeps its part in its shard
  bool expert = false;       // of the expert parameter group: cut over edp, not dp
  int parts = 1;             // ranks it is cut over: dp size, or edp size for an expert unit
  int part = 0;              // this rank's part: its dp rank, or its edp rank
};

// A run of real (non-padding) elements of one parameter inside a rank's shard.
struct ShardSegment {
  int64_t shard_offset = 0;
  int64_t layout_offset = 0;  // the same element in ParamLayout's flat order
  int64_t len = 0;
  int param = 0;  // index into ParamLayout::params()
  int unit = 0;   // index into Partition::units()
};

class Partition {
 public:
  static constexpr int64_t kAlign = 16;  // elements: 64 bytes of fp32, 32 of bf16

  // `edp_size`/`edp_rank`: the expert group's (0: the dp ones); edp_size divides dp_size.
  Partition(const ParamLayout& layout, int dp_size, int dp_rank, int64_t unit_elems,
            int edp_size = 0, int edp_rank = 0);

  int dp_size() const { return dp_; }
  int dp_rank() const { return rank_; }
  int edp_size() const { return edp_; }
  int edp_rank() const { return edp_rank_; }
  // Some unit is of the expert group (cut over edp rather than dp).
  bool has_expert_units() const { return has_expert_; }
  const std::vector<PartitionUnit>& units() const { return units_; }
  // Units of `block`: [first, last) indices into units().
  std::pair<int, int> block_units(int block) const {
    return block_units_[static_cast<size_t>(block)];
  }
  int64_t padded_block_begin(int block) const { return padded_begin_[static_cast<size_t>(block)]; }
  int64_t padded_block_len(int block) const { return padded_len_[static_cast<size_t>(block)]; }
  // Padded elements any unit may have under this unit flag (at least every unit's padded_len):
  // what unit-sized buffers are sized by.
  int64_t max_unit() const { return max_unit_; }
  // The largest part of any unit of this model (a reduced gradient part, a parameter part).
  int64_t max_part() const { return max_part_; }
  int64_t padded_numel() const { return padded_numel_; }
  int64_t shard_numel() const { return shard_numel_; }
  // This rank's real elements, in shard order.
  const std::vector<ShardSegment>& segments() const { return segments_; }
  // Where this rank's shard element `shard_offset` of unit `unit` sits in padded space.
  int64_t padded_of_shard(int unit, int64_t shard_offset) const {
    const auto& u = units_[static_cast<size_t>(unit)];
    return u.padded_begin + int64_t{u.part} * u.part_len + (shard_offset - u.shard_offset);
  }
  // The padded-space element of a layout element, and the unit holding it.
  int64_t padded_of(int64_t layout_offset) const;
  int unit_of(int64_t layout_offset) const;

 private:
  int dp_, rank_, edp_, edp_rank_;
  bool has_expert_ = false;
  std::vector<PartitionUnit> units_;
  std::vector<std::pair<int, int>> block_units_;
  std::vector<int64_t> padded_begin_, padded_len_;
  std::vector<int64_t> unit_layout_begin_;  // units with real elements, by layout offset
  std::vector<int> unit_index_;
  int64_t max_unit_ = 0, max_part_ = 0, padded_numel_ = 0, shard_numel_ = 0;
  std::vector<ShardSegment> segments_;
};

}  // namespace zt
