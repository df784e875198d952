#pragma once
// ZeRO-3's gather schedule as the simulator models it, with DeepSpeed's meaning of the flags:
// when the step reaches unit i (in the recorded order: forward, or backward's reverse) it
// fetches i if no gather of it is in flight, then issues the gathers of the following units, in
// order, while the elements gathered ahead of i (i+1..j) stay within `prefetch_bucket_elems`
// and everything live (i..j, each released after its use) within `max_live_elems`. One function
// so the trainer's own policy can replace it.
#include <cstdint>
#include <vector>

namespace zt {

// For each unit j of `elems` (in use order), the unit at whose start its gather is issued
// (issue[j] <= j; j itself when nothing ahead of it could hold it).
std::vector<int> zero3_gather_issue(const std::vector<int64_t>& elems,
                                    int64_t prefetch_bucket_elems, int64_t max_live_elems);

}  // namespace zt
