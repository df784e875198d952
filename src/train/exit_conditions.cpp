#include "src/train/exit_conditions.h"

#include <fmt/format.h>

#include <csignal>

namespace zt {
namespace {

volatile std::sig_atomic_t g_signal = 0;  // the signal number received, 0 for none

extern "C" void remember_signal(int sig) {
  g_signal = sig;
}

}  // namespace

bool stops_cleanly_on_signal(const TrainOptions& o) {
  return o.exit_signal_handler || (!o.save.empty() && !o.no_exit_signal_handler);
}

ExitConditions::ExitConditions(const TrainOptions& o, comm::ScalarReducer& reducer)
    : o_(o), reducer_(reducer), start_(std::chrono::steady_clock::now()) {
  if (!stops_cleanly_on_signal(o_)) return;
  g_signal = 0;
  previous_term_ = std::signal(SIGTERM, remember_signal);
  previous_int_ = std::signal(SIGINT, remember_signal);
  // SLURM's warning before the time limit (sbatch --signal=USR1@<seconds>); SIGTERM comes only
  // with the kill itself, KillWait seconds before SIGKILL.
  previous_usr1_ = std::signal(SIGUSR1, remember_signal);
  // launch/mpirun.sh turns the launcher's SIGTERM/SIGINT into SIGUSR2, which mpirun forwards to
  // every rank on every node without ending the job itself.
  previous_usr2_ = std::signal(SIGUSR2, remember_signal);
}

ExitConditions::~ExitConditions() {
  if (!stops_cleanly_on_signal(o_)) return;
  std::signal(SIGTERM, previous_term_ == SIG_ERR ? SIG_DFL : previous_term_);
  std::signal(SIGINT, previous_int_ == SIG_ERR ? SIG_DFL : previous_int_);
  std::signal(SIGUSR1, previous_usr1_ == SIG_ERR ? SIG_DFL : previous_usr1_);
  std::signal(SIGUSR2, previous_usr2_ == SIG_ERR ? SIG_DFL : previous_usr2_);
}

std::string ExitConditions::reason_to_stop(int iteration) {
  const bool clocked = o_.exit_duration_in_mins > 0;
  if (stops_cleanly_on_signal(o_) || clocked) {
    const double minutes =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() / 60.0;
    // [signal number, minutes elapsed]: the largest over ranks decides, identically everywhere.
    double flags[2] = {static_cast<double>(g_signal), minutes};
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
