#include "src/data/bpe_merge.h"

#include <functional>
#include <queue>

namespace zt::data {

void bpe_merge_rescan(const PairMap& merges, std::vector<int32_t>& s) {
  while (s.size() > 1) {
    const Merge* best = nullptr;
    size_t best_at = 0;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const Merge* m = merges.find(s[i], s[i + 1]);
      if (m && (!best || m->rank < best->rank)) {
        best = m;
        best_at = i;
      }
    }
    if (!best) return;
    const int32_t a = s[best_at], b = s[best_at + 1], merged = best->id;
    size_t w = best_at;  // everything before the first occurrence stays in place
    for (size_t r = best_at; r < s.size();) {
      if (r + 1 < s.size() && s[r] == a && s[r + 1] == b) {
        s[w++] = merged;
        r += 2;
      } else {
        s[w++] = s[r++];
      }
    }
    s.resize(w);
  }
}

void bpe_merge_heap(const PairMap& merges, std::vector<int32_t>& s) {
  const int n = static_cast<int>(s.size());
  if (n < 2) return;
  std::vector<int> next(n), prev(n);
  for (int i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  // (rank, left position): equal ranks pop left to right, which is GPT-2's in-pass order.
  using Entry = std::pair<int32_t, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  auto push = [&](int i) {
    if (i < 0 || next[i] < 0) return;
    if (const Merge* m = merges.find(s[i], s[next[i]])) heap.push({m->rank, i});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<char> dead(n, 0);
  while (!heap.empty()) {
    const auto [rank, i] = heap.top();
    heap.pop();
    if (dead[i] || next[i] < 0) continue;
    const Merge* m = merges.find(s[i], s[next[i]]);
    if (!m || m->rank != rank) continue;  // stale: a neighbour merged since it was pushed
    const int j = next[i];
    s[i] = m->id;
    dead[j] = 1;
    next[i] = next[j];
    if (next[j] >= 0) prev[next[j]] = i;
    push(prev[i]);
    push(i);
  }
  size_t w = 0;
  for (int i = 0; i >= 0; i = next[i]) s[w++] = s[i];
  s.resize(w);
}

}  // namespace zt::data
