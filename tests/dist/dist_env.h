#pragma once
// The environment of a multi-rank gtest program (tests/dist): one MpiRuntime, one world
// communicator and one MemoryPool for the whole process, built by dist_main.cpp.
//
// dist_main.cpp also makes a failure on any rank fail the job: every rank prints its own
// failures as "[rank R] FAILED ..." (only rank 0 prints the full gtest output; set
// ZT_DIST_VERBOSE=1 for every rank's), the pass/fail flags are gathered, rank 0 prints which
// ranks failed, and every rank exits non-zero when any failed. A crash on a rank is reported by
// mpirun ("process rank R ... exited on signal") and also fails the job; a rank that leaves
// its peers waiting is ended by the collective watchdog (ZT_COMM_TIMEOUT seconds, default 60).
// Tests must issue the same collectives on every rank: use EXPECT_*, not ASSERT_*, before a
// collective, so a failing rank does not skip it.
#include <functional>
#include <string>

#include "src/comm/mpi_communicator.h"
#include "src/comm/runtime.h"
#include "src/core/memory_pool.h"

namespace zt::dist {

comm::MpiRuntime& runtime();
comm::MpiCommunicator& world();
MemoryPool& pool();
// Runs `f` after the tests, before the world communicator and the pool are destroyed (for
// communicators a test program keeps in statics).
void on_teardown(std::function<void()> f);
// The directory a test program writes its files under, with a trailing '/': <build>/tests/dist/
// scratch/, so two checkouts running CTest at once do not share paths (::testing::TempDir() is
// /tmp/ for all of them). Created when missing. Names below it must still tell a program's rank
// counts apart: its np1, np2 and np4 runs may run at the same time.
std::string scratch_dir();

}  // namespace zt::dist
