// The collective watchdog's tracked work (what NcclCommunicator registers for every op, since
// its wait() does not block the host), in one process without MPI or a GPU: entries are
// forgotten when their poll reports done or their owner calls forget(); one pending past the
// timeout, or one reporting a failure, ends the process with one line after its on_fail ran.
// With a RankBoard, a placed guard publishes what the rank blocks in, and its timeout line names
// the member that never arrived.
#include "src/comm/watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace zt::comm {
namespace {

using Poll = Watchdog::Poll;

bool eventually(const std::function<bool()>& f) {
  for (int i = 0; i < 2000; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST(WatchdogTracked, DoneEntriesAreForgotten) {
  Watchdog dog(0, 60.0, [] { std::_Exit(9); });
  std::atomic<bool> finished{false};
  std::atomic<int> polls{0};
  int owner = 0;
  dog.track(
      &owner, "all_reduce", "dp",
      [&](std::string&) {
        ++polls;
        return finished.load() ? Poll::Done : Poll::Pending;
      },
      nullptr);
  EXPECT_EQ(dog.tracked(), 1u);
  ASSERT_TRUE(eventually([&] { return polls.load() >= 3; }));  // polled, still pending
  EXPECT_EQ(dog.tracked(), 1u);
  finished = true;
  EXPECT_TRUE(eventually([&] { return dog.tracked() == 0; }));
}

TEST(WatchdogTracked, ForgetDropsAnOwnersEntriesOnly) {
  Watchdog dog(0, 60.0, [] { std::_Exit(9); });
  int a = 0, b = 0;
  auto pending = [](std::string&) { return Poll::Pending; };
  dog.track(&a, "all_gather", "world", pending, nullptr);
  dog.track(&b, "reduce_scatter", "dp", pending, nullptr);
  dog.track(&a, "broadcast", "world", pending, nullptr);
  EXPECT_EQ(dog.tracked(), 3u);
  dog.forget(&a);
  EXPECT_EQ(dog.tracked(), 1u);
  dog.forget(&b);
  EXPECT_EQ(dog.tracked(), 0u);
}

TEST(WatchdogTracked, NoTimeoutWhenDisabled) {
  Watchdog dog(0, 0.0, [] { std::_Exit(9); });
  int owner = 0;
  dog.track(
      &owner, "all_reduce", "dp", [](std::string&) { return Poll::Pending; }, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(dog.tracked(), 1u);  // still there, and the process still runs
  dog.forget(&owner);
}

// The end of the job: one line, then on_fail (ncclCommAbort in NcclCommunicator), then the
// abort function (MPI_Abort in MpiRuntime; here an exit with a code of its own).
void pending_forever(double timeout_s) {
  Watchdog dog(3, timeout_s, [] { std::_Exit(7); });
  int owner = 0;
  dog.track(
      &owner, "all_reduce", "dp", [](std::string&) { return Poll::Pending; },
      [] { std::fputs("on_fail ran\n", stderr); });
  std::this_thread::sleep_for(std::chrono::seconds(20));
}

TEST(WatchdogTrackedDeathTest, PendingPastTheTimeoutEndsTheJob) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EXIT(pending_forever(0.3), testing::ExitedWithCode(7),
              "zerotron: error: collective all_reduce on group dp timed out on rank 3 \\(not "
              "complete after 0\\.[3-9] s");
  EXPECT_EXIT(pending_forever(0.3), testing::ExitedWithCode(7), "on_fail ran");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(WatchdogTrackedDeathTest, AFailedPollEndsTheJobWithItsCause) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Watchdog dog(1, 600.0, [] { std::_Exit(7); });
        int owner = 0;
        dog.track(
            &owner, "reduce_scatter", "dp",
            [](std::string& why) {
              why = "asynchronous NCCL error: remote process exited";
              return Poll::Failed;
            },
            nullptr);
        std::this_thread::sleep_for(std::chrono::seconds(20));
      },
      testing::ExitedWithCode(7),
      "zerotron: error: collective reduce_scatter on group dp failed on rank 1: asynchronous "
      "NCCL error: remote process exited");
}

// With a board: what the rank blocks in is published while a placed guard is armed, and a
// timeout prints the board's line, naming the member that never arrived.
struct TwoRanks {
  RankRecord records[2];
  RankBoard mine{{&records[0], &records[1]}, 0, {0, 0}, {"a", "a"}};
  RankBoard peer{{&records[0], &records[1]}, 1, {0, 0}, {"a", "a"}};
  const int members[2] = {0, 1};
  const uint64_t key = group_key(GroupKind::Dp, members);
};

TEST(WatchdogBoard, PublishesWhatItBlocksIn) {
  TwoRanks n;
  Watchdog dog(0, 60.0, [] { std::_Exit(9); });
  dog.set_board(&n.mine);
  EXPECT_NE(n.records[0].heartbeat_ns.load(), 0u);
  const uint64_t seq = dog.issue("all_reduce", GroupKind::Dp, n.key);
  EXPECT_EQ(seq, 1u);
  {
    auto guard =
        dog.arm("all_reduce", "dp", Watchdog::Where{GroupKind::Dp, seq, n.members, -1, n.key});
    EXPECT_EQ(Activity::unpack(n.records[0].waiting.load()).text(), "all_reduce #1 on group dp");
  }
  EXPECT_EQ(n.records[0].waiting.load(), 0u) << "computing again once the guard is gone";
  dog.set_board(nullptr);
}

TEST(WatchdogBoardDeathTest, TimeoutNamesTheRankThatNeverArrived) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        TwoRanks n;
        n.peer.heartbeat(
            static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now().time_since_epoch())
                                      .count()));
        Watchdog dog(0, 0.3, [] { std::_Exit(7); });
        dog.set_board(&n.mine);
        const uint64_t seq = dog.issue("all_reduce", GroupKind::Dp, n.key);
        auto guard =
            dog.arm("all_reduce", "dp", Watchdog::Where{GroupKind::Dp, seq, n.members, -1, n.key});
        std::this_thread::sleep_for(std::chrono::seconds(20));
      },
      testing::ExitedWithCode(7),
      "zerotron: error: collective all_reduce on group dp timed out on rank 0 after 0\\.[3-9] s "
      "\\(#1 on the group\\): rank 1 \\(host a\\) never arrived: computing \\(nothing yet on group "
      "dp\\); rank 0 arrived");
}

}  // namespace
}  // namespace zt::comm
