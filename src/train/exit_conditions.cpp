#include "src/train/exit_conditions.h"

#include <fmt/format.h>

#include <csignal>

namespace zt {

bool stops_cleanly_on_signal(const TrainOptions& o) {
  return o.exit_signal_handler || (!o.save.empty() && !o.no_exit_signal_handler);
}

ExitConditions::ExitConditions(const TrainOptions& o, comm::ScalarReducer& reducer)
    : o_(o),
      reducer_(reducer),
      start_(std::chrono::steady_clock::now()),
      signals_(stops_cleanly_on_signal(o)) {}

std::string ExitConditions::reason_to_stop(int iteration) {
  const bool clocked = o_.exit_duration_in_mins > 0;
  if (stops_cleanly_on_signal(o_) || clocked) {
    const double minutes =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() / 60.0;
    // [signal number, minutes elapsed]: the largest over ranks decides, identically everywhere.
    double flags[2] = {static_cast<double>(StopSignals::received()), minutes};
    reducer_.max(flags);
    if (flags[0] != 0)
      return fmt::format("{} received (--exit-signal-handler)",
                         flags[0] == SIGINT    ? "SIGINT"
                         : flags[0] == SIGUSR1 ? "SIGUSR1"
                         : flags[0] == SIGUSR2 ? "SIGUSR2 (the launcher's stop)"
                                               : "SIGTERM");
    if (clocked && flags[1] >= o_.exit_duration_in_mins)
      return fmt::format("{:.2f} minutes elapsed (--exit-duration-in-mins {})", flags[1],
                         o_.exit_duration_in_mins);
  }
  if (o_.exit_interval > 0 && iteration % o_.exit_interval == 0)
    return fmt::format("--exit-interval {}", o_.exit_interval);
  return {};
}

}  // namespace zt
