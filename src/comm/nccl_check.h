#pragma once
// ZT_NCCL_CHECK(call): every NCCL call goes through it. On failure it throws zt::Error naming the
// call, file:line, the world rank, NCCL's error string and its last-error detail.
#include <nccl.h>

#include <source_location>

namespace zt::comm::detail {
void check_nccl(ncclResult_t rc, const char* call, std::source_location loc);
}  // namespace zt::comm::detail

#define ZT_NCCL_CHECK(call) \
  ::zt::comm::detail::check_nccl((call), #call, std::source_location::current())
