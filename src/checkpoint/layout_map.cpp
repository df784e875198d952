#include "src/checkpoint/layout_map.h"

#include <algorithm>

#include "src/core/error.h"

namespace zt {

TpLocation locate_tp(const ParamSpec& p, int tp, int64_t f) {
  const int64_t total = p.full_numel();
  if (p.split == TpSplit::Replicated || tp == 1) return {0, f, total - f};
  const int64_t cols = p.full_shape.rank() == 2 ? p.full_shape[1] : 1;
  const int64_t row = f / cols, col = f % cols;
  if (p.split == TpSplit::InputColumns) {
    const int64_t local_cols = cols / tp;
    const int64_t within = col % local_cols;
    return {static_cast<int>(col / local_cols), row * local_cols + within, local_cols - within};
  }
  // Rows split in stacked groups, each divided over the ranks (see full_index).
  const int g = p.row_group_of(row, false);
  const int64_t group_local = p.full_group_rows(g) / tp, within = row - p.full_group_begin(g);
  const int64_t r = within / group_local;
  const int64_t local_row = p.full_group_begin(g) / tp + within % group_local;
  return {static_cast<int>(r), local_row * cols + col,
          (group_local - within % group_local) * cols - col};
}

EpLocation locate_ep(const ParamSpec& p, int ep, int64_t f) {
  if (!p.expert || ep == 1) return {0, f, p.full_numel() - f};
  const int64_t stack = p.full_numel() / ep;
  const auto q = static_cast<int>(f / stack);
  const int64_t element = f - q * stack;
  return {q, element, stack - element};
}

int64_t full_run(const ParamSpec& p, int64_t i) {
  const int64_t n = p.numel();
  if (p.split == TpSplit::Replicated || p.tp_size == 1) return n - i;
  const int64_t cols = p.shape.rank() == 2 ? p.shape[1] : 1;
  if (p.split == TpSplit::InputColumns) return cols - i % cols;
  const int64_t row = i / cols;
  const int g = p.row_group_of(row, true);
  const int64_t group_local = p.full_group_rows(g) / p.tp_size;
  return (group_local - (row - p.full_group_begin(g) / p.tp_size)) * cols - i % cols;
}

ShardLocation locate_shard(const Partition& part, int64_t layout_offset, int ep, int ep_rank) {
  const int64_t padded = part.padded_of(layout_offset);
  const auto& units = part.units();
  const auto it =
      std::upper_bound(units.begin(), units.end(), padded,
                       [](int64_t x, const PartitionUnit& u) { return x < u.padded_begin; });
  const PartitionUnit& u = *(it - 1);
  ZT_CHECK(u.parts * (u.expert ? ep : 1) == part.dp_size(),
           "a unit cut into {} parts under dp {} and ep {}", u.parts, part.dp_size(), ep);
  const int64_t within = padded - u.padded_begin;
  const auto k = static_cast<int>(within / u.part_len);
  // The run ends with the rank's part or with the unit's real elements, whichever comes first:
  // the unit's padding is not the next element of the layout.
  return {u.expert ? k * ep + ep_rank : k, u.shard_offset + within % u.part_len,
          std::min(u.part_len - within % u.part_len, u.real_len - within)};
}

SavedStage saved_stage(const CheckpointLayout& s, int pp_rank) {
  SavedStage st;
  // Every ep rank's layout has the same names, shapes and offsets: rank 0's stands for all.
  GptConfig model = s.model;
  model.expert_parallel = s.ep;
  st.layout = ParamLayout::gpt(
      model, s.tp, 0,
      PipelinePart{s.pp, pp_rank, s.chunks, s.first_stage_layers, s.last_stage_layers},
      ExpertPart{0});
  const int head = st.layout.head_block();
  if (s.stage > 0) {
    st.part.emplace(st.layout, s.dp, 0, s.partition_unit, s.dp / s.ep, 0);
    st.section =
        head < 0
            ? st.part->shard_numel()
            : st.part->units()[static_cast<size_t>(st.part->block_units(head).first)].shard_offset;
  } else {
    st.section = head < 0 ? st.layout.numel() : st.layout.blocks()[static_cast<size_t>(head)].begin;
  }
  return st;
}

ShardHeader shard_header(const CheckpointLayout& s, const SavedStage& st, int tp_rank,
                         int dp_rank) {
  ShardHeader h;
  h.tp_rank = tp_rank;
  h.dp_rank = dp_rank;
  h.tp = s.tp;
  h.dp = s.dp;
  h.zero_stage = s.stage;
  h.iteration = s.iteration;
  h.partition_unit = s.partition_unit;
  h.layout_numel = st.layout.numel();
  h.shard_numel = st.section;
  h.pp_rank = st.layout.pipeline().rank;
  h.pp = s.pp;
  h.chunks = s.chunks;
  return h;
}

}  // namespace zt
