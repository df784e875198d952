// BackgroundJob (src/core/background_job.h): a job runs on the worker thread while its owner
// goes on, the owner's wait for a mark returns as soon as the job publishes it (not when the job
// ends), an error ends the job and is rethrown by every later wait, and the destructor waits for
// the running job.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "src/core/background_job.h"

namespace zt {
namespace {

using namespace std::chrono_literals;

TEST(BackgroundJob, RunsOnItsOwnThreadAfterTheBind) {
  std::thread::id bound, ran;
  BackgroundJob job([&] { bound = std::this_thread::get_id(); });
  job.start([&] { ran = std::this_thread::get_id(); });
  job.wait();
  EXPECT_EQ(bound, ran);
  EXPECT_NE(ran, std::this_thread::get_id());
  EXPECT_FALSE(job.busy());
}

// The job publishes mark 10, then holds until the owner, having seen the mark, lets it go: a
// wait_for(10) that waited for the job's end would never return (the test's own time limit).
TEST(BackgroundJob, AWaitForAMarkReturnsWhileTheJobRuns) {
  BackgroundJob job;
  std::atomic<bool> go{false};
  job.start([&] {
    job.publish(5);
    job.publish(10);
    while (!go.load()) std::this_thread::sleep_for(1ms);
    job.publish(20);
  });
  job.wait_for(10);
  EXPECT_TRUE(job.busy());
  go = true;
  job.wait();
  EXPECT_FALSE(job.busy());
  job.wait_for(1000);  // no job running: at once
}

TEST(BackgroundJob, EachJobStartsFromMarkZero) {
  BackgroundJob job;
  std::atomic<bool> go{false};
  job.start([&] { job.publish(100); });
  job.wait();
  job.start([&] {
    while (!go.load()) std::this_thread::sleep_for(1ms);
    job.publish(1);
  });
  std::thread release([&] {
    std::this_thread::sleep_for(50ms);
    go = true;
  });
  job.wait_for(1);  // the first job's 100 does not count for the second
  EXPECT_TRUE(go.load());
  release.join();
  job.wait();
}

TEST(BackgroundJob, AnErrorIsRethrownByEveryLaterWait) {
  BackgroundJob job;
  job.start([&] {
    job.publish(1);
    throw std::runtime_error("the swap file is full");
  });
  EXPECT_THROW(job.wait_for(2), std::runtime_error);
  EXPECT_THROW(job.wait(), std::runtime_error);
  EXPECT_THROW(job.wait_for(0), std::runtime_error);
}

TEST(BackgroundJob, TheDestructorWaitsForTheRunningJob) {
  std::atomic<bool> done{false};
  {
    BackgroundJob job;
    job.start([&] {
      std::this_thread::sleep_for(50ms);
      done = true;
    });
  }
  EXPECT_TRUE(done.load());
}

TEST(BackgroundJob, StartingWhileAJobRunsIsABug) {
  BackgroundJob job;
  std::atomic<bool> go{false};
  job.start([&] {
    while (!go.load()) std::this_thread::sleep_for(1ms);
  });
  EXPECT_ANY_THROW(job.start([] {}));
  go = true;
  job.wait();
}

}  // namespace
}  // namespace zt
