#include "src/planner/prefetch_model.h"

#include <cstddef>

namespace zt {

std::vector<int> zero3_gather_issue(const std::vector<int64_t>& elems,
                                    int64_t prefetch_bucket_elems, int64_t max_live_elems) {
  const int n = static_cast<int>(elems.size());
  std::vector<int> issue(static_cast<size_t>(n));
  int next = 0;  // the first unit whose gather is not issued yet
  for (int i = 0; i < n; ++i) {
    if (next <= i) {  // nothing fetched it ahead: unit i is fetched at its own start
      issue[static_cast<size_t>(i)] = i;
      next = i + 1;
    }
    int64_t ahead = 0, live = 0;
    for (int k = i; k < next; ++k) {
      live += elems[static_cast<size_t>(k)];
      if (k > i) ahead += elems[static_cast<size_t>(k)];
    }
    while (next < n) {
      const int64_t e = elems[static_cast<size_t>(next)];
      if (ahead + e > prefetch_bucket_elems || live + e > max_live_elems) break;
      ahead += e;
      live += e;
      issue[static_cast<size_t>(next)] = i;
      ++next;
    }
  }
  return issue;
}

}  // namespace zt
