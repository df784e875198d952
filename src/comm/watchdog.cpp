#include "src/comm/watchdog.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace zt::comm {

Watchdog::Watchdog(int rank, double timeout_s, std::function<void()> abort)
    : rank_(rank), abort_(std::move(abort)), timeout_s_(timeout_s) {
  slots_.reserve(16);
  thread_ = std::thread([this] { monitor(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::set_timeout(double seconds) {
  {
    std::lock_guard lk(mu_);
    timeout_s_ = seconds;
  }
  cv_.notify_all();
}

double Watchdog::timeout() const {
  std::lock_guard lk(mu_);
  return timeout_s_;
}

Watchdog::Guard Watchdog::arm(std::string_view op, std::string_view group) {
  std::lock_guard lk(mu_);
  size_t i = 0;
  while (i < slots_.size() && slots_[i].active) ++i;
  if (i == slots_.size()) slots_.emplace_back();
  slots_[i] = Slot{true, op, group, Clock::now()};
  return Guard(this, i);
}

void Watchdog::disarm(size_t slot) {
  std::lock_guard lk(mu_);
  slots_[slot].active = false;
}

void Watchdog::monitor() {
  std::unique_lock lk(mu_);
  while (!stop_) {
    // Check often enough that a timeout fires within ~10% (at least every second).
    const double t = timeout_s_ > 0 ? std::clamp(timeout_s_ / 10.0, 0.01, 1.0) : 1.0;
    cv_.wait_for(lk, std::chrono::duration<double>(t));
    if (stop_ || timeout_s_ <= 0) continue;
    const auto now = Clock::now();
    for (const Slot& s : slots_) {
      if (!s.active) continue;
      const double waited = std::chrono::duration<double>(now - s.start).count();
      if (waited < timeout_s_) continue;
      std::fprintf(stderr,
                   "zerotron: error: collective %.*s on group %.*s timed out on rank %d "
                   "(not complete after %.1f s; a peer rank failed, hangs or skipped it; raise "
                   "--comm-timeout if this step is legitimately slower)\n",
                   static_cast<int>(s.op.size()), s.op.data(), static_cast<int>(s.group.size()),
                   s.group.data(), rank_, waited);
      std::fflush(stderr);
      lk.unlock();
      if (abort_) abort_();
      std::_Exit(3);
    }
  }
}

}  // namespace zt::comm
