#pragma once
// ZeRO-3's gather schedule as the simulator models it: the trainer's PrefetchPolicy
// (src/zero/prefetch_policy.h, DeepSpeed's meaning of --prefetch-bucket-size and
// --max-live-parameters) run over one pass of the units in use order (forward, or backward's
// reverse), after a first pass that records the order as the trainer's first step does.
#include <cstdint>
#include <vector>

namespace zt {

// For each unit j of `elems` (in use order), the unit at whose start its gather is issued
// (issue[j] <= j; j itself when nothing ahead of it could hold it).
std::vector<int> zero3_gather_issue(const std::vector<int64_t>& elems,
                                    int64_t prefetch_bucket_elems, int64_t max_live_elems);

}  // namespace zt
