#include "src/core/stop_signals.h"

#include <csignal>

namespace zt {
namespace {

volatile std::sig_atomic_t g_signal = 0;  // the signal number received, 0 for none

extern "C" void remember_signal(int sig) {
  g_signal = sig;
}

constexpr int kSignals[4] = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2};

}  // namespace

StopSignals::StopSignals(bool on) : on_(on) {
  if (!on_) return;
  for (int k = 0; k < 4; ++k) previous_[k] = std::signal(kSignals[k], remember_signal);
  if (previous_[0] != remember_signal) g_signal = 0;  // the outermost starts afresh
}

StopSignals::~StopSignals() {
  if (!on_) return;
  for (int k = 0; k < 4; ++k)
    std::signal(kSignals[k], previous_[k] == SIG_ERR ? SIG_DFL : previous_[k]);
}

int StopSignals::received() {
  return g_signal;
}

}  // namespace zt
