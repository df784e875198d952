#pragma once
// Watchdog: the collective watchdog. Every blocking collective, and every wait() of an async
// one, arms a Guard for its duration. A monitor thread checks the armed guards; when one has
// been armed longer than the timeout it prints
//   zerotron: error: collective <op> on group <g> timed out on rank <r> ...
// to stderr and calls the abort function (MPI_Abort in MpiRuntime), so a rank that waits for a
// peer that never comes (crashed, skipped the collective, deadlocked) ends the whole job.
// No MPI here: the abort action is injected, so the unit test can check it in one process.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace zt::comm {

class Watchdog {
 public:
  // `abort` runs on the monitor thread after the message is printed; it should not return
  // (if it does, the process exits with status 3).
  Watchdog(int rank, double timeout_s, std::function<void()> abort);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Seconds; <= 0 disables the watchdog. Safe to call at any time (e.g. once --comm-timeout
  // has been parsed, after MPI is up).
  void set_timeout(double seconds);
  double timeout() const;

  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& o) noexcept : dog_(o.dog_), slot_(o.slot_) { o.dog_ = nullptr; }
    Guard& operator=(Guard&&) = delete;
    Guard(const Guard&) = delete;
    ~Guard() {
      if (dog_) dog_->disarm(slot_);
    }

   private:
    friend class Watchdog;
    Guard(Watchdog* d, size_t s) : dog_(d), slot_(s) {}
    Watchdog* dog_ = nullptr;
    size_t slot_ = 0;
  };
  // `op` and `group` must be string literals or otherwise outlive the guard.
  [[nodiscard]] Guard arm(std::string_view op, std::string_view group);

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    bool active = false;
    std::string_view op, group;
    Clock::time_point start;
  };
  void disarm(size_t slot);
  void monitor();

  const int rank_;
  std::function<void()> abort_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  double timeout_s_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace zt::comm
