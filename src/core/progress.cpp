#include "src/core/progress.h"

#include <fmt/format.h>

#include <utility>

#include "src/core/log.h"

namespace zt {

Progress::Progress(std::string what, uint64_t total, bool enabled, double interval_s)
    : what_(std::move(what)),
      total_(total),
      enabled_(enabled),
      interval_s_(interval_s),
      start_(Clock::now()),
      last_(start_) {
  if (!enabled_) return;
  if (total_ > 0)
    log::info(" {} ({:.1f} MB)", what_, static_cast<double>(total_) / 1e6);
  else
    log::info(" {}", what_);
}

double Progress::seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::string Progress::status() const {
  const double s = seconds(), mb = static_cast<double>(done_) / 1e6;
  const std::string of =
      total_ > 0 ? fmt::format(" of {:.1f} MB ({:.0f}%)", static_cast<double>(total_) / 1e6,
                               100.0 * static_cast<double>(done_) / static_cast<double>(total_))
                 : std::string(" MB");
  return fmt::format("{:.1f}{}, {:.1f} MB/s, {:.1f} s", mb, of, s > 0 ? mb / s : 0.0, s);
}

void Progress::add(uint64_t bytes) {
  done_ += bytes;
  if (!enabled_) return;
  const auto now = Clock::now();
  if (std::chrono::duration<double>(now - last_).count() < interval_s_) return;
  last_ = now;
  log::info(" {}: {}", what_, status());
}

double RunClock::step(double ms) {
  recent_ms_.push_back(ms);
  sum_ms_ += ms;
  if (recent_ms_.size() > kWindow) {
    sum_ms_ -= recent_ms_.front();
    recent_ms_.pop_front();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double RunClock::eta(int steps) const {
  if (recent_ms_.empty() || steps <= 0) return 0;
  return sum_ms_ / static_cast<double>(recent_ms_.size()) / 1e3 * steps;
}

std::string clock_time(double seconds) {
  const auto t = static_cast<int64_t>(seconds > 0 ? seconds : 0);
  return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
}

}  // namespace zt
