#include "src/core/background_job.h"

#include <utility>

#include "src/core/error.h"

namespace zt {

BackgroundJob::BackgroundJob(std::function<void()> bind)
    : bind_(std::move(bind)), thread_([this] { loop(); }) {}

BackgroundJob::~BackgroundJob() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !busy_; });
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BackgroundJob::start(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    ZT_CHECK(!busy_, "a background job started while another runs");
    job_ = std::move(job);
    mark_ = 0;
    busy_ = true;
  }
  cv_.notify_all();
}

bool BackgroundJob::busy() const {
  std::lock_guard lock(mu_);
  return busy_;
}

void BackgroundJob::publish(int64_t mark) {
  {
    std::lock_guard lock(mu_);
    mark_ = mark;
  }
  cv_.notify_all();
}

void BackgroundJob::rethrow_locked() const {
  if (error_) std::rethrow_exception(error_);
}

void BackgroundJob::wait_for(int64_t mark) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !busy_ || mark_ >= mark; });
  rethrow_locked();
}

void BackgroundJob::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !busy_; });
  rethrow_locked();
}

void BackgroundJob::loop() {
  if (bind_) bind_();
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || busy_; });
    if (stop_) return;
    std::function<void()> job = std::move(job_);
    lock.unlock();
    std::exception_ptr error;
    try {
      job();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !error_) error_ = error;
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace zt
