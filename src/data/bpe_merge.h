#pragma once
// Applying BPE merges to one pre-tokenized word, GPT-2's way: repeatedly merge every occurrence
// (left to right, non-overlapping) of the adjacent pair with the lowest rank until none is in
// the table. Two equivalent algorithms: a rescan that is fastest for the short words of natural
// text, and a heap over a linked list that keeps pathological long words (runs of thousands of
// spaces or symbols) O(n log n) instead of quadratic.
#include <cstdint>
#include <vector>

#include "src/data/pair_map.h"

namespace zt::data {

void bpe_merge_rescan(const PairMap& merges, std::vector<int32_t>& symbols);
void bpe_merge_heap(const PairMap& merges, std::vector<int32_t>& symbols);

// Picks one of the two by length.
inline void bpe_merge(const PairMap& merges, std::vector<int32_t>& symbols) {
  if (symbols.size() <= 48)
    bpe_merge_rescan(merges, symbols);
  else
    bpe_merge_heap(merges, symbols);
}

}  // namespace zt::data
