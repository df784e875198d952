#pragma once
// Clean stops (Megatron's --exit-signal-handler, --exit-interval, --exit-duration-in-mins): the
// trainer asks after every step whether to stop; the answer is the same on every rank, so all
// of them save the same iteration and leave with exit status 0. A signal or a clock is local to
// one rank: those flags are max-reduced over the world each step (only when such an option is
// set, so a run without them pays nothing).
#include <chrono>
#include <string>

#include "src/comm/scalar_reducer.h"
#include "src/config/options.h"
#include "src/core/stop_signals.h"

namespace zt {

// Whether SIGTERM, SIGINT, SIGUSR1 and SIGUSR2 make every rank finish its step, save and exit 0:
// --exit-signal-handler, or --save without --no-exit-signal-handler (launch/mpirun.sh reads the
// same flags to tell whether a stop it passes on will be saved).
bool stops_cleanly_on_signal(const TrainOptions& o);

class ExitConditions {
 public:
  // `reducer`: over the world. When stops_cleanly_on_signal, the signals are caught
  // (StopSignals) until destruction.
  ExitConditions(const TrainOptions& o, comm::ScalarReducer& reducer);
  ExitConditions(const ExitConditions&) = delete;
  ExitConditions& operator=(const ExitConditions&) = delete;

  // After step `iteration`: empty to go on, else why every rank stops now.
  std::string reason_to_stop(int iteration);

 private:
  const TrainOptions& o_;
  comm::ScalarReducer& reducer_;
  std::chrono::steady_clock::time_point start_;
  StopSignals signals_;
};

}  // namespace zt
