#pragma once
// ZT_MPI(call): every MPI call goes through it. On failure it throws zt::Error naming the call,
// file:line, the world rank and MPI's error string. Communicators use MPI_ERRORS_RETURN so the
// error reaches us instead of MPI's default abort-without-context.
#include <mpi.h>

#include <source_location>

namespace zt::comm::detail {
void check_mpi(int rc, const char* call, std::source_location loc);
}  // namespace zt::comm::detail

#define ZT_MPI(call) ::zt::comm::detail::check_mpi((call), #call, std::source_location::current())
