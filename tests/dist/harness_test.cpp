// The harness itself: with ZT_DIST_FAIL_RANK=R (passed with mpirun -x) one rank fails, and the
// CTest test dist.harness_reports_failing_rank checks the job exits non-zero naming rank R.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/dist/dist_util.h"

namespace zt::dist {
namespace {

TEST(Harness, FailureOnOneRankIsReported) {
  const char* env = std::getenv("ZT_DIST_FAIL_RANK");
  const int fail_rank = env ? std::atoi(env) : -1;
  HostTensor x(DType::F32, 1);
  x.set(0, 1.0f);
  world().all_reduce(x.t());
  EXPECT_EQ(x.get(0), static_cast<float>(world().size()));
  EXPECT_NE(world().rank(), fail_rank) << "injected failure (ZT_DIST_FAIL_RANK)";
}

}  // namespace
}  // namespace zt::dist
