#include "src/model/context_split.h"

#include <cstring>

#include "src/core/error.h"

namespace zt {

ContextSplit ContextSplit::of(const GptConfig& config, comm::Communicator* group) {
  ContextSplit s;
  s.size = config.context_parallel;
  s.seq = config.seq_length;
  s.comm = config.context_comm;
  const int members = group != nullptr ? group->size() : 1;
  ZT_CHECK(members == s.size, "a context split of {} ranks over a group of {}", s.size, members);
  if (s.active()) {
    s.group = group;
    s.rank = group->rank();
  }
  return s;
}

void keep_local_tokens(const ContextSplit& s, const int32_t* whole, int32_t* local, int B) {
  for_each_run(s, 0, int64_t{B} * s.local(), [&](int64_t offset, int64_t n, int64_t whole_row) {
    std::memcpy(local + offset, whole + whole_row, static_cast<size_t>(n) * sizeof(int32_t));
  });
}

}  // namespace zt
