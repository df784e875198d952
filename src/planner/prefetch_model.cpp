#include "src/planner/prefetch_model.h"

#include <algorithm>
#include <cstddef>

#include "src/zero/prefetch_policy.h"

namespace zt {

std::vector<int> zero3_gather_issue(const std::vector<int64_t>& elems,
                                    int64_t prefetch_bucket_elems, int64_t max_live_elems) {
  const int n = static_cast<int>(elems.size());
  std::vector<int> issue(static_cast<size_t>(n));
  if (n == 0) return issue;
  // The trainer's own policy: a first step records the order, the second follows it.
  const int64_t max_unit = *std::max_element(elems.begin(), elems.end());
  PrefetchPolicy policy(elems, std::vector<char>(static_cast<size_t>(n), 0), max_unit,
                        PrefetchLimits{prefetch_bucket_elems, max_live_elems});
  for (int pass = 0; pass < 2; ++pass) {
    policy.begin_step();
    for (int j = 0; j < n; ++j) {
      const PrefetchPolicy::Actions a = policy.acquire(j);
      if (pass == 1) {
        if (a.demand == j) issue[static_cast<size_t>(j)] = j;
        for (int p : a.prefetch) issue[static_cast<size_t>(p)] = j;
      }
      policy.release(j);
    }
    policy.end_step();
  }
  return issue;
}

}  // namespace zt
