#pragma once
// ZT_MPI(call): every MPI call goes through it. On failure it throws zt::Error naming the call,
// file:line, the world rank and MPI's error string. Communicators use MPI_ERRORS_RETURN so the
// error reaches us instead of MPI's default abort-without-context.
#include <mpi.h>

#include <source_location>
#include <vector>

namespace zt::comm::detail {
void check_mpi(int rc, const char* call, std::source_location loc);
// MPI_COMM_WORLD's rank of each member of `comm`, in `comm`'s rank order (both communicators'
// world_rank_of). Errors go through check_mpi.
std::vector<int> world_ranks_of(MPI_Comm comm);
}  // namespace zt::comm::detail

#define ZT_MPI(call) ::zt::comm::detail::check_mpi((call), #call, std::source_location::current())
