#pragma once
// Progress of a long byte-moving operation (a checkpoint save or load, an export or import) on
// the console: a start line at once, then a line at most every `interval` seconds while bytes
// arrive (done, total, MB/s), so nothing long is silent. Lines go through log::line: rank 0
// only.
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

namespace zt {

class Progress {
 public:
  // `what`: the operation ("saving checkpoint iteration 10 to DIR"); `total`: bytes expected
  // (0: unknown); `enabled` false: silent.
  Progress(std::string what, uint64_t total, bool enabled = true, double interval_s = 5.0);
  // `bytes` more are done: prints a line when `interval` has passed since the last one.
  void add(uint64_t bytes);
  uint64_t done() const { return done_; }
  void set_total(uint64_t total) { total_ = total; }
  double seconds() const;
  // The status text of a progress line: "12.3 of 45.6 MB (27%), 4.5 MB/s, 2.7 s".
  std::string status() const;

 private:
  using Clock = std::chrono::steady_clock;
  std::string what_;
  uint64_t total_ = 0, done_ = 0;
  bool enabled_ = true;
  double interval_s_ = 5.0;
  Clock::time_point start_, last_;
};

// A loop's elapsed time and its ETA from the mean of the last kWindow step times (a moving
// average: the first steps' warm-up and a slow save fade out of it).
class RunClock {
 public:
  static constexpr size_t kWindow = 20;
  RunClock() : start_(std::chrono::steady_clock::now()) {}
  // A step of `ms` ended: returns the seconds since construction.
  double step(double ms);
  // Seconds left for `steps` more at the recent mean step time.
  double eta(int steps) const;

 private:
  std::chrono::steady_clock::time_point start_;
  std::deque<double> recent_ms_;
  double sum_ms_ = 0;
};

// H:MM:SS, as Megatron-LM prints elapsed and remaining time.
std::string clock_time(double seconds);

}  // namespace zt
