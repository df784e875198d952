#include "src/model/moe_slots.h"

#include <algorithm>
#include <cmath>

namespace zt {

void MoeSlots::reserve(int64_t N, int k, int E) {
  slots.assign(static_cast<size_t>(N * k), -1);
  rows.assign(static_cast<size_t>(E), 0);
  picks.assign(static_cast<size_t>(E), 0);
  next_.assign(static_cast<size_t>(E), 0);
  order_.reserve(static_cast<size_t>(N * k));
}

int64_t MoeSlots::capacity(double cf, int64_t N, int k, int E) {
  if (cf <= 0) return -1;
  return static_cast<int64_t>(std::ceil(cf * static_cast<double>(N * k) / E));
}

void MoeSlots::assign(std::span<const int32_t> experts, std::span<const float> weights, int64_t N,
                      int k, int E, int64_t cap) {
  const auto nk = static_cast<size_t>(N * k);
  std::fill(picks.begin(), picks.end(), 0);
  for (size_t i = 0; i < nk; ++i) ++picks[static_cast<size_t>(experts[i])];
  std::fill(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(nk), 0);
  dropped = 0;
  if (cap >= 0) {
    // Per expert over capacity: its choices by weight, the lowest beyond `cap` marked dropped.
    for (int e = 0; e < E; ++e) {
      if (picks[static_cast<size_t>(e)] <= cap) continue;
      order_.clear();
      for (size_t i = 0; i < nk; ++i)
        if (experts[i] == e) order_.push_back(static_cast<int32_t>(i));
      std::stable_sort(order_.begin(), order_.end(),
                       [&](int32_t a, int32_t b) { return weights[a] > weights[b]; });
      for (size_t i = static_cast<size_t>(cap); i < order_.size(); ++i) {
        slots[static_cast<size_t>(order_[i])] = -1;
        ++dropped;
      }
    }
  }
  // Kept rows expert by expert, each expert's in token order.
  std::fill(rows.begin(), rows.end(), 0);
  for (size_t i = 0; i < nk; ++i)
    if (slots[i] == 0) ++rows[static_cast<size_t>(experts[i])];
  std::vector<int64_t>& next = next_;
  int64_t at = 0;
  for (int e = 0; e < E; ++e) {
    next[static_cast<size_t>(e)] = at;
    at += rows[static_cast<size_t>(e)];
  }
  for (size_t i = 0; i < nk; ++i)
    if (slots[i] == 0) slots[i] = static_cast<int32_t>(next[static_cast<size_t>(experts[i])]++);
}

int64_t MoeSlots::total_rows() const {
  int64_t n = 0;
  for (int64_t r : rows) n += r;
  return n;
}

int64_t moe_expert_rows_max(const GptConfig& c, int64_t tokens) {
  const int64_t nk = tokens * c.moe_topk;
  if (c.expert_parallel == 1) return nk;
  const int64_t worst = nk * c.expert_parallel;
  const int64_t cap = MoeSlots::capacity(c.moe_capacity_factor, tokens, c.moe_topk, c.num_experts);
  return cap < 0 ? worst : std::min(worst, cap * c.num_experts);
}

}  // namespace zt
