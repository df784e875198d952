#include "src/comm/watchdog.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace zt::comm {

namespace {
// The board's clock: steady_clock is CLOCK_MONOTONIC, one clock for every process of a node.
uint64_t now_ns(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}
}  // namespace

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
  slots_[i] = Slot{true, op, group, Clock::now(), false, {}};
  return Guard(this, i);
}

Watchdog::Guard Watchdog::arm(std::string_view op, std::string_view group, const Where& where) {
  Guard g = arm(op, group);
  std::lock_guard lk(mu_);
  slots_[g.slot_].placed = true;
  slots_[g.slot_].where = where;
  publish_waiting();
  return g;
}

void Watchdog::disarm(size_t slot) {
  std::lock_guard lk(mu_);
  slots_[slot].active = false;
  if (slots_[slot].placed) publish_waiting();
}

void Watchdog::set_board(RankBoard* board) {
  std::lock_guard lk(mu_);
  board_ = board;
  if (board_) board_->heartbeat(now_ns(Clock::now()));
}

uint64_t Watchdog::issue(std::string_view op, GroupKind kind, uint64_t group) {
  std::lock_guard lk(mu_);
  return board_ ? board_->issue(op, kind, group) : 0;
}

void Watchdog::publish_waiting() {
  if (!board_) return;
  const Slot* latest = nullptr;
  for (const Slot& s : slots_)
    if (s.active && s.placed && (!latest || s.start > latest->start)) latest = &s;
  Activity a;
  if (latest) a = Activity{RankBoard::op_code(latest->op), latest->where.group, latest->where.seq};
  board_->set_waiting(a, latest ? latest->where.key : 0);
}

void Watchdog::track(const void* owner, std::string_view op, std::string_view group, PollFn poll,
                     std::function<void()> on_fail) {
  bool first = false;
  {
    std::lock_guard lk(mu_);
    first = tracked_.empty();
    tracked_.push_back(
        Tracked{owner, op, group, Clock::now(), std::move(poll), std::move(on_fail)});
  }
  if (first) cv_.notify_all();  // the monitor may be in a long sleep: switch to fast polling
}

void Watchdog::forget(const void* owner) {
  std::lock_guard lk(mu_);
  std::erase_if(tracked_, [owner](const Tracked& t) { return t.owner == owner; });
}

size_t Watchdog::tracked() const {
  std::lock_guard lk(mu_);
  return tracked_.size();
}

std::string Watchdog::timeout_line(std::string_view op, std::string_view group,
                                   double waited) const {
  return fmt::format(
      "collective {} on group {} timed out on rank {} (not complete after {:.1f} s; a peer rank "
      "failed, hangs or skipped it; raise --comm-timeout if this step is legitimately slower)",
      op, group, rank_, waited);
}

void Watchdog::time_out(std::unique_lock<std::mutex>& lk, const Slot& s, double waited) {
  // Without a board, or on a communicator it does not number, the plain line.
  if (!board_ || !s.placed || (s.where.seq == 0 && s.where.peer < 0))
    fail(lk, timeout_line(s.op, s.group, waited), nullptr);
  const Stuck stuck{s.op, s.where.group, s.where.seq, s.where.members, s.where.peer, waited};
  const auto now = now_ns(Clock::now());
  const RankBoard::Verdict v = board_->attribute(stuck, now, kStaleS);
  // A rank that most of its group did not join is likely the one that diverged: the others wait
  // elsewhere and their watchdogs fire within a timeout. Their line comes first; this one's
  // follows once any line is out, or after that wait (at most 10 s) if none comes.
  if (v.missing > v.arrived) {
    const auto until =
        Clock::now() + std::chrono::duration<double>(std::clamp(timeout_s_, 1.0, 10.0));
    while (!board_->claimed(stuck) && !board_->any_printed() && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    // mpirun forwards each rank's output on its own: a moment, so the other line reads first
    // (the job is usually gone before it ends).
    if (board_->any_printed()) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (board_->claim(stuck)) {
    std::fprintf(stderr, "zerotron: error: %s\n", v.line.c_str());
    std::fflush(stderr);
    board_->printed(stuck);
    fail(lk, {}, nullptr);
  }
  // Another waiting rank of this node prints the group's line; this one's would repeat it.
  fail(lk, board_->wait_printed(stuck, 2.0) ? std::string() : v.line, nullptr);
}

void Watchdog::fail(std::unique_lock<std::mutex>& lk, const std::string& line,
                    const std::function<void()>& on_fail) {
  if (!line.empty()) {
    std::fprintf(stderr, "zerotron: error: %s\n", line.c_str());
    std::fflush(stderr);
  }
  const std::function<void()> local = on_fail;  // the entry may go once the lock is released
  lk.unlock();
  // The end stays bounded even if on_fail (ncclCommAbort) or the abort function hangs.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    std::_Exit(3);
  }).detach();
  if (local) local();
  if (abort_) abort_();
  std::_Exit(3);
}

void Watchdog::poll_tracked(std::unique_lock<std::mutex>& lk) {
  const auto now = Clock::now();
  std::string why;
  for (size_t i = 0; i < tracked_.size();) {
    Tracked& t = tracked_[i];
    why.clear();
    const Poll p = t.poll(why);
    if (p == Poll::Done) {
      tracked_[i] = std::move(tracked_.back());  // completion order does not matter here
      tracked_.pop_back();
      continue;
    }
    const double waited = std::chrono::duration<double>(now - t.start).count();
    if (p == Poll::Failed)
      fail(
          lk,
          fmt::format("collective {} on group {} failed on rank {}: {}", t.op, t.group, rank_, why),
          t.on_fail);
    if (timeout_s_ > 0 && waited >= timeout_s_)
      fail(lk, timeout_line(t.op, t.group, waited), t.on_fail);
    ++i;
  }
}

void Watchdog::monitor() {
  std::unique_lock lk(mu_);
  while (!stop_) {
    // Check often enough that a timeout fires within ~10% (at least every second); tracked
    // device work is polled every 2 ms so its entries (and their events) do not pile up.
    double t = timeout_s_ > 0 ? std::clamp(timeout_s_ / 10.0, 0.01, 1.0) : 1.0;
    if (!tracked_.empty()) t = std::min(t, 0.002);
    cv_.wait_for(lk, std::chrono::duration<double>(t));
    if (stop_) continue;
    const auto now = Clock::now();
    if (board_) board_->heartbeat(now_ns(now));
    poll_tracked(lk);
    if (timeout_s_ <= 0) continue;
    for (const Slot& s : slots_) {
      if (!s.active) continue;
      const double waited = std::chrono::duration<double>(now - s.start).count();
      if (waited < timeout_s_) continue;
      time_out(lk, s, waited);
    }
  }
}

}  // namespace zt::comm
