#pragma once
// StopSignals: while one exists (and is on), SIGTERM, SIGINT, SIGUSR1 and SIGUSR2 only record
// which arrived; the previous handlers are restored at destruction. Nested, the inner one keeps
// what the outer one caught, so a process can catch a stop from start-up and act on it later.
//   SIGUSR1: SLURM's warning before the time limit (sbatch --signal=USR1@<seconds>; SIGTERM
//            comes only with the kill itself, KillWait seconds before SIGKILL).
//   SIGUSR2: launch/mpirun.sh turns the launcher's SIGTERM/SIGINT into it, which Open MPI's
//            mpirun forwards to every rank on every node without ending the job.
namespace zt {

class StopSignals {
 public:
  explicit StopSignals(bool on);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // The signal number received, 0 for none.
  static int received();

 private:
  using Handler = void (*)(int);
  bool on_ = false;
  Handler previous_[4] = {};
};

}  // namespace zt
