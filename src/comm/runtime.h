#pragma once
// MpiRuntime: MPI_Init/MPI_Finalize as RAII, who-am-I (rank, local rank, world; from MPI, checked
// against SLURM's variables under srun), the abort path and the collective watchdog.
//
// The one correct main:
//   int main(int argc, char** argv) {
//     zt::comm::MpiRuntime rt(argc, argv);          // MPI up, watchdog + progress threads
//     return rt.run_guarded([&] {                   // any exception: one line + MPI_Abort
//       zt::MemoryPool pool(zt::make_host_allocator());
//       auto world = rt.world(pool);                // MPI_COMM_WORLD dup, owned by the caller
//       zt::comm::Topology topo(*world, tp, pp);
//       rt.set_comm_timeout(args.comm_timeout);
//       ...
//       return 0;
//     });                                           // communicators freed before MPI_Finalize
//   }
// An exception escaping the function on any rank prints
//   zerotron: error: rank R: <what()>
// and calls MPI_Abort (code 2 for zt::InputError, 1 otherwise), so no other rank waits forever.
// An exception thrown on another thread, or out of a destructor, reaches std::terminate, which
// the runtime also routes to the same line + MPI_Abort.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/comm/comm_stats.h"
#include "src/comm/mpi_communicator.h"
#include "src/comm/rank_board.h"
#include "src/comm/watchdog.h"

namespace zt::comm {

struct RuntimeOptions {
  double comm_timeout_s = 600.0;  // the collective watchdog; <= 0 disables
  ProgressMode progress = ProgressMode::Thread;
  int poll_interval_us = 20;  // progress thread's sleep between polls while ops are in flight
  // MpiContext::synchronous_sends for every communicator of the world: a test mode, also set by
  // ZT_SYNCHRONOUS_SENDS=1 in the environment (CI runs the pipeline tests so, to catch an
  // exchange order that would deadlock on NCCL).
  bool synchronous_sends = false;
};

// What the launcher says about this process, from the environment (no MPI needed, so a CUDA
// build can pick its device before MPI_Init). Fields are -1 when the launcher did not set them.
struct LaunchInfo {
  int rank = -1, local_rank = -1, world = -1;
  bool slurm = false;  // SLURM_PROCID was set (srun)
};
// SLURM_PROCID / SLURM_LOCALID / SLURM_NTASKS under srun, else Open MPI's
// OMPI_COMM_WORLD_RANK / _LOCAL_RANK / _SIZE. `getenv` is injectable for tests.
LaunchInfo launch_info_from_env(const char* (*getenv_fn)(const char*) = nullptr);

class MpiRuntime {
 public:
  MpiRuntime(int& argc, char**& argv, RuntimeOptions opts = {});
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  bool under_slurm() const { return launch_.slurm; }
  bool thread_multiple() const { return thread_multiple_; }
  // Every rank's node: the lowest world rank sharing memory with it (MPI_COMM_TYPE_SHARED), and
  // its host name; gathered once at start-up. The node's ranks also share a RankBoard (one
  // record each in an MPI_Win_allocate_shared window), where the watchdog names the ranks that
  // never arrived at a collective that timed out.
  const std::vector<int>& node_of() const { return node_of_; }
  const std::vector<std::string>& hosts() const { return hosts_; }

  // A communicator over all ranks (a duplicate of MPI_COMM_WORLD). Destroy it (and everything
  // split from it) before the runtime. Staging buffers come from `pool`, which must outlive it.
  std::unique_ptr<MpiCommunicator> world(MemoryPool& pool);

  CommStats& stats() { return stats_; }
  Watchdog& watchdog() { return *watchdog_; }
  MpiProgress& progress() { return *progress_; }
  void set_comm_timeout(double seconds) { watchdog_->set_timeout(seconds); }

  // Runs `body`; an escaping exception prints one line naming this rank and aborts the job.
  int run_guarded(const std::function<int()>& body);
  // Runs the input checks `check` on every rank, then the ranks agree (one all-reduce, under the
  // watchdog) on whether any of them threw InputError. When none did, returns 0. When some did,
  // the lowest such rank prints its one line, and every rank returns 2, so the caller can leave
  // through a clean MPI_Finalize: bad input ends the job once, without MPI_Abort. Any other
  // exception escapes (and run_guarded aborts the job, as for a fault).
  int agree_on_input(const std::function<void()>& check);
  // Prints "zerotron: error: rank R: <cause>" and MPI_Aborts the whole job.
  [[noreturn]] void abort(std::string_view cause, int code = 1);

 private:
  void find_nodes();
  // The shared window of the node's records and the board over it; the watchdog's from then on.
  void open_board(MPI_Comm node);
  // Frees the window (collective over the node) once every rank has reached the end.
  void close_board();

  int rank_ = 0, world_ = 1, local_rank_ = 0, local_size_ = 1;
  bool thread_multiple_ = false;
  LaunchInfo launch_;
  std::vector<int> node_of_;
  std::vector<std::string> hosts_;
  std::vector<int> all_ranks_;  // 0 .. world - 1: the members of the runtime's own collectives
  uint64_t world_key_ = 0;      // their counter on the board: the world communicators' one
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  MPI_Win board_win_ = MPI_WIN_NULL;
  std::unique_ptr<RankBoard> board_;
  CommStats stats_;
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<MpiProgress> progress_;
  bool synchronous_sends_ = false;
};

// Prints the error line for this process and MPI_Aborts (usable without a runtime object,
// e.g. from a signal-free terminate handler). Never returns.
[[noreturn]] void abort_job(std::string_view cause, int code);

}  // namespace zt::comm
