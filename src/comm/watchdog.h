#pragma once
// Watchdog: the collective watchdog. Every blocking collective, and every wait() of an async
// one, arms a Guard for its duration. A monitor thread checks the armed guards; when one has
// been armed longer than the timeout it prints
//   zerotron: error: collective <op> on group <g> timed out on rank <r> ...
// to stderr and calls the abort function (MPI_Abort in MpiRuntime), so a rank that waits for a
// peer that never comes (crashed, skipped the collective, deadlocked) ends the whole job.
// No MPI here: the abort action is injected, so the unit test can check it in one process.
//
// Tracked work: device collectives (NCCL) whose wait() only orders a stream, so no host thread
// blocks on them and no guard can be armed. Each is registered with track() when issued; the
// monitor thread polls it (every few milliseconds while any is outstanding) and forgets it once
// done. One still pending after the timeout, or one whose poll reports a failure (an
// asynchronous NCCL error), ends the job the same way: one line, the entry's own `on_fail`
// (ncclCommAbort, so its kernels stop), then the abort function.
//
// Attribution: with a RankBoard (set_board), a guard armed with its place in the group (Where)
// is published as what this rank blocks in, the monitor thread beats the board's heartbeat, and
// a timeout prints the board's line instead (which members never arrived and what they do),
// once per group and node: the first waiting rank to claim it prints, the others wait for that
// line (up to 2 s) and end without one of their own. A rank most of its group never joined (it
// is likely the one that diverged) prints only after another line of its node is out, or after
// min(timeout, 10 s) without one.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/comm/rank_board.h"

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

  // The published states of this node's ranks (owned by the caller; null: none). Set it before
  // the collectives it should name and clear it before it goes.
  void set_board(RankBoard* board);
  // A collective this rank issues on the communicator of `kind` and key `group` (group_key()):
  // its number there (RankBoard::issue; 0 without a board).
  uint64_t issue(std::string_view op, GroupKind kind, uint64_t group);
  // A wait inside collective `seq` of `members` (world ranks; they must outlive the guard), or a
  // point-to-point operation with world rank `peer`.
  struct Where {
    GroupKind group = GroupKind::World;
    uint64_t seq = 0;
    std::span<const int> members;
    int peer = -1;
    uint64_t key = 0;  // group_key(group, members)
  };
  [[nodiscard]] Guard arm(std::string_view op, std::string_view group, const Where& where);
  // A rank silent this long is named stopped or dead: three of the monitor's longest polls.
  static constexpr double kStaleS = 3.0;

  enum class Poll { Pending, Done, Failed };
  // Polled on the monitor thread, under the watchdog's lock (keep it short and non-blocking);
  // on Failed it writes the cause into its argument.
  using PollFn = std::function<Poll(std::string& why)>;
  // Registers work of `owner` (an address only used by forget()); `op` and `group` as for arm().
  void track(const void* owner, std::string_view op, std::string_view group, PollFn poll,
             std::function<void()> on_fail);
  // Drops every entry of `owner`, done or not; after it returns the monitor touches none of them.
  // For the owner's destructor, once its work has finished or been abandoned.
  void forget(const void* owner);
  // Entries not yet seen done (for tests).
  size_t tracked() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    bool active = false;
    std::string_view op, group;
    Clock::time_point start;
    bool placed = false;  // `where` is known
    Where where;
  };
  struct Tracked {
    const void* owner;
    std::string_view op, group;
    Clock::time_point start;
    PollFn poll;
    std::function<void()> on_fail;
  };
  void disarm(size_t slot);
  void monitor();
  // Polls the tracked work; ends the job on a failure or a timeout. Called with `lk` held.
  void poll_tracked(std::unique_lock<std::mutex>& lk);
  std::string timeout_line(std::string_view op, std::string_view group, double waited) const;
  // Publishes the latest armed slot with a place as what this rank blocks in. Called with mu_.
  void publish_waiting();
  // A slot past the timeout: its line (attributed with a board; printed once per group), then
  // the end of the job.
  [[noreturn]] void time_out(std::unique_lock<std::mutex>& lk, const Slot& s, double waited);
  [[noreturn]] void fail(std::unique_lock<std::mutex>& lk, const std::string& line,
                         const std::function<void()>& on_fail);

  const int rank_;
  std::function<void()> abort_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  std::vector<Tracked> tracked_;
  double timeout_s_;
  RankBoard* board_ = nullptr;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace zt::comm
